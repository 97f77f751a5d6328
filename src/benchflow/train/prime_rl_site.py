"""BenchFlow's run-local Prime-RL SFT hooks: copied as ``sitecustomize.py`` into ``<work-dir>/prime-rl-shim/``
by ``bench train run sft`` (:mod:`benchflow.train.prime_rl_shim`) and put first on the trainer's
``PYTHONPATH``. It imports nothing of BenchFlow and changes no file of Prime-RL; each hook is switched on by
its environment variable and stops the trainer with one line when Prime-RL's code is not the shape it was
written for (the SFT trainer of Prime-RL from March to July 2026).

- ``BENCHFLOW_PRIME_RL_PRETOKENIZED=1``: a row staged by ``--message-tail-truncation
  custom-trainer-pretokenized`` (``benchflow_input_ids``, ``benchflow_target_ids``, ``benchflow_loss_mask``,
  ``benchflow_position_ids``) is a sample as it is, and every micro-batch holds one row, unpacked.
- ``BENCHFLOW_PRIME_RL_SAMPLE_MEAN=1`` (``--loss-normalization sample_mean``): the loss of a micro-batch is
  the sum over its rows of each row's mean token loss, counted as one per row, so the step's loss is the
  mean over rows instead of over tokens.
"""

import importlib.abc
import importlib.machinery
import os
import sys

DATA_MODULE = "prime_rl.trainer.sft.data"
TRAIN_MODULE = "prime_rl.trainer.sft.train"
PRETOKENIZED_ENV = "BENCHFLOW_PRIME_RL_PRETOKENIZED"
SAMPLE_MEAN_ENV = "BENCHFLOW_PRIME_RL_SAMPLE_MEAN"
FIELDS = ("input_ids", "target_ids", "loss_mask", "position_ids")

TOKEN_SUM = "loss_sum = token_loss[loss_mask].sum()"
ROW_MEANS = ("row_tokens = loss_mask.sum(dim=1)", "rows = row_tokens > 0",
             "loss_sum = ((token_loss * loss_mask.to(token_loss.dtype)).sum(dim=1)[rows] / row_tokens[rows]).sum()",
             "token_count = rows.sum(dtype=torch.int64)")
STEP_COUNTS = "global_step_token_count = step_local_token_count.clone()"
PRECOUNTED = 'micro_batch["loss_mask"].sum()'


class ShimRefused(RuntimeError):
    """Prime-RL's code is not the shape a hook was written for (the trainer must not run half-patched)."""


def sample_mean_source(text):
    """``train.py``'s text with each micro-batch's loss as the sum of its rows' mean token losses."""
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if line.strip() == TOKEN_SUM]
    if len(hits) != 1 or text.count("return loss_sum, token_count") != 1 or STEP_COUNTS not in text \
            or PRECOUNTED in text:
        raise ShimRefused(f"BenchFlow Prime-RL shim: {TRAIN_MODULE} does not reduce the loss as the per-row mean "
                          "hook expects; use a Prime-RL SFT trainer of March-July 2026, or --loss-normalization "
                          "token_mean")
    indent = lines[hits[0]][: len(lines[hits[0]]) - len(lines[hits[0]].lstrip())]
    lines[hits[0]: hits[0] + 1] = [indent + line for line in ROW_MEANS]
    return "\n".join(lines)


def pretokenized_hooks(module):
    """Make ``module`` (Prime-RL's SFT data module) take staged rows as samples, one row per micro-batch."""
    dataset = getattr(module, "SFTDataset", None)
    loader = getattr(module, "StatefulDataLoader", None)
    torch = getattr(module, "torch", None)
    sample = getattr(getattr(module, "Sample", None), "__annotations__", {})
    if dataset is None or not hasattr(dataset, "_process") or loader is None or torch is None \
            or not hasattr(module, "setup_dataloader") or set(sample) != set(FIELDS):
        raise ShimRefused(f"BenchFlow Prime-RL shim: {DATA_MODULE} is not the SFTDataset._process, setup_dataloader "
                          f"and Sample of {', '.join(FIELDS)} the pretokenized-rows hook expects; use a Prime-RL SFT "
                          "trainer of March-July 2026")
    process = dataset._process

    def staged_or_process(self, example):
        if not (isinstance(example, dict) and example.get("benchflow_custom_trainer_pretokenized")):
            return process(self, example)
        sample = {name: list(example["benchflow_" + name]) for name in FIELDS}
        sample["loss_mask"] = [bool(flag) for flag in sample["loss_mask"]]
        if len({len(values) for values in sample.values()}) != 1 or not any(sample["loss_mask"]):
            raise ValueError("BenchFlow pretokenized row: its four token lists differ in length or train nothing")
        return sample

    def one_row(samples):
        (sample,) = samples
        return {name: torch.tensor([sample[name]], dtype=torch.bool if name == "loss_mask" else torch.long)
                for name in FIELDS}

    def setup_dataloader(data, config):
        return loader(data, batch_size=1, collate_fn=one_row)

    dataset._process = staged_or_process
    module.setup_dataloader = setup_dataloader


class _Loader(importlib.machinery.SourceFileLoader):
    """Compiles the module from its source (never a cached .pyc), rewritten, and runs ``after`` on it."""

    def __init__(self, name, path, rewrite, after):
        super().__init__(name, path)
        self.rewrite, self.after = rewrite, after

    def get_code(self, fullname):
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)

    def source_to_code(self, data, path, *, _optimize=-1):
        if self.rewrite is not None:
            data = self.rewrite(data.decode("utf-8") if isinstance(data, bytes) else data)
        return super().source_to_code(data, path, _optimize=_optimize)

    def exec_module(self, module):
        super().exec_module(module)
        if self.after is not None:
            self.after(module)


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, name, rewrite=None, after=None):
        self.name, self.rewrite, self.after = name, rewrite, after

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            raise ShimRefused(f"BenchFlow Prime-RL shim: {fullname} is not a source module it can hook")
        spec.loader = _Loader(fullname, spec.loader.path, self.rewrite, self.after)
        return spec


if os.environ.get(PRETOKENIZED_ENV) == "1":
    sys.meta_path.insert(0, _Finder(DATA_MODULE, after=pretokenized_hooks))
if os.environ.get(SAMPLE_MEAN_ENV) == "1":
    sys.meta_path.insert(0, _Finder(TRAIN_MODULE, rewrite=sample_mean_source))
