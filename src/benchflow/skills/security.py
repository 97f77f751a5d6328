"""The security scan of a skill (the SkillSpector pass): what a skill could make an agent do harm
with. Pattern rules over every text file, no model call; each rule names what it saw."""

from __future__ import annotations

import re

from benchflow.util.redact import redact_text

from .checks import Finding, hidden_unicode
from .discover import Skill

_RULES: list[tuple[str, re.Pattern[str], str]] = [
    ("critical", re.compile(r"\brm\s+-[a-zA-Z]*r[a-zA-Z]*f?\s+(?:--no-preserve-root\s+)?(?:/|~|\$HOME)(?:\s|$|/\*)"),
     "deletes the root or home folder"),
    ("critical", re.compile(r"/dev/tcp/|\bnc\b[^\n|]*\s-e\s|\bsocat\b[^\n]*exec:", re.IGNORECASE),
     "opens a reverse shell"),
    ("high", re.compile(r"\b(?:curl|wget)\b[^\n|]*\|\s*(?:sudo\s+)?(?:ba|z|da)?sh\b"),
     "pipes a download into a shell"),
    ("high", re.compile(r"base64\s+(?:-d|--decode)[^\n|]*\|\s*(?:ba)?sh\b|\beval\s+\"?\$\((?:curl|wget)"),
     "runs decoded or downloaded code"),
    ("high", re.compile(r"~/\.ssh/|\$HOME/\.ssh/|~/\.aws/credentials|/etc/shadow|\.git-credentials|"
                        r"~/\.netrc|\.config/gcloud", re.IGNORECASE),
     "reads credential files"),
    ("high", re.compile(r"\b(?:env|printenv)\b[^\n]*\|\s*(?:curl|wget|nc)\b|(?:curl|wget)\b[^\n]*\$\{?"
                        r"[A-Z_]*(?:KEY|TOKEN|SECRET)", re.IGNORECASE),
     "sends environment secrets over the network"),
    ("high", re.compile(r"ignore\s+(?:all\s+)?(?:the\s+)?(?:previous|prior|above)\s+instructions|"
                        r"disregard\s+(?:the\s+)?(?:system|previous)\s+(?:prompt|instructions)|"
                        r"do\s+not\s+(?:tell|inform)\s+the\s+user", re.IGNORECASE),
     "prompt-injection wording"),
    ("medium", re.compile(r"\bchmod\s+(?:-R\s+)?777\s+/(?:\s|$)|\bchmod\s+-R\s+777\b"), "makes files world-writable"),
    ("medium", re.compile(r"\bcrontab\b|/etc/cron\.|systemctl\s+enable|\.bashrc|\.profile\b"),
     "installs something that persists"),
    ("low", re.compile(r"\bsudo\b"), "uses sudo"),
]


def scan(skill: Skill) -> list[Finding]:
    """Security findings over every text file of the skill (hidden Unicode included: invisible text
    is how instructions are smuggled past a reviewer)."""
    out: list[Finding] = []
    for rel in skill.files:
        text = skill.text(rel)
        if text is None:
            continue
        where = rel.as_posix()
        for number, line in enumerate(text.splitlines(), 1):
            for severity, pattern, what in _RULES:
                if pattern.search(line):
                    out.append(Finding("security", severity, what, where, number))
            if redact_text(line) != line:
                out.append(Finding("security", "high", "an embedded credential", where, number))
        for number, what in hidden_unicode(text):
            out.append(Finding("security", "critical" if "tag" in what else "high",
                               f"instructions hidden from a reader ({what})", where, number))
    return out
