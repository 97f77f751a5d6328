"""TEST DOUBLE of ``prime_rl.trainer.sft.data``: SFTDataset renders a chat row to (fake) token ids; the
data loader packs two samples per micro-batch (Prime-RL packs by its window)."""

from types import SimpleNamespace
from typing import TypedDict

torch = SimpleNamespace(long="long", bool="bool", tensor=lambda data, dtype: {"dtype": dtype, "data": data})


class Sample(TypedDict):
    input_ids: list[int]
    position_ids: list[int]
    loss_mask: list[bool]
    target_ids: list[int]


class StatefulDataLoader:
    def __init__(self, dataset, batch_size, collate_fn):
        self.dataset, self.batch_size, self.collate_fn = dataset, batch_size, collate_fn

    def __iter__(self):
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch:
            yield self.collate_fn(batch)


class SFTDataset:
    def __init__(self, rows):
        self.rows = rows

    def _process(self, example):
        ids = [len(str(m.get("content") or "")) for m in example["messages"]]
        return {"input_ids": ids[:-1], "target_ids": ids[1:], "loss_mask": [True] * (len(ids) - 1),
                "position_ids": list(range(len(ids) - 1))}

    def __iter__(self):
        for row in self.rows:
            yield self._process(row)


def packed(samples):
    return {"packed": [s["input_ids"] for s in samples]}


def setup_dataloader(dataset, config):
    return StatefulDataLoader(dataset, batch_size=2, collate_fn=packed)

