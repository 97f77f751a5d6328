"""A pytest plugin the verifier loads with ``-p``: it loads the pytest plugins installed root-owned.

Copied into the sandbox (root-owned, read-only) just before the verifier runs and put on the
verifier's ``PYTHONPATH``; it runs inside whatever Python the task's ``test.sh`` starts pytest
with (the image's, or one that ``uvx`` makes), so it uses the standard library only and must
import on any Python 3.

Why: the verifier pins ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` so that a plugin the agent planted
cannot change how its work is graded. But published verifiers install their own plugins as root
at verification time (``pip install pytest-json-ctrf`` then ``pytest --ctrf …``, or
``uvx -w pytest-json-ctrf pytest --ctrf …``), so the set of trusted plugins is only known once
pytest starts. At import, this module lists the ``pytest11`` entry points of the distributions
Python sees and names, in ``pytest_plugins``, those whose metadata folder and the folder holding
it are owned by root and writable by nobody else: as trusted as the verifier that installed
them. A plugin in a folder the agent could write is not loaded, and a ``PluginGuardLoadError``
line on stderr says which (the verifier then reports ``verifier_plugin_trust``).
"""

import os
import stat
import sys


def _root_owned(path):
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_uid == 0 and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _trusted_plugin_modules():
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8: no entry points to trust
        return []
    modules = []
    for dist in metadata.distributions():
        points = [p for p in dist.entry_points if p.group == "pytest11"]
        where = getattr(dist, "_path", None)
        if not points or where is None:
            continue
        where = str(where)
        if not (_root_owned(where) and _root_owned(os.path.dirname(where))):
            sys.stderr.write("PluginGuardLoadError: pytest plugin %s at %s not loaded: it is installed where "
                             "a non-root user could write (install it as root, e.g. uvx --with, or bake it "
                             "into the image)\n" % (", ".join(p.name for p in points), where))
            continue
        for point in points:
            module = point.value.split(":")[0].strip()
            if module and module not in modules:
                modules.append(module)
    return modules


pytest_plugins = _trusted_plugin_modules()
