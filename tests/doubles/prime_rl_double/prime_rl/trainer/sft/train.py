"""TEST DOUBLE of ``prime_rl.trainer.sft.train``: ``compute_loss`` reduces the loss with the lines of
Prime-RL's (March-July 2026), on numpy arrays dressed as torch tensors; the step loop's count line is there
as text, as the shim checks for it."""

import numpy


class _T:
    """The torch.Tensor calls compute_loss makes, on a numpy array."""

    def __init__(self, a):
        self.a = numpy.asarray(a)

    @property
    def dtype(self):
        return self.a.dtype

    def sum(self, dim=None, dtype=None):
        return _T(self.a.sum(axis=dim))

    def to(self, dtype):
        return _T(self.a.astype(float))

    def __mul__(self, other):
        return _T(self.a * other.a)

    def __truediv__(self, other):
        return _T(self.a / other.a)

    def __gt__(self, number):
        return _T(self.a > number)

    def __getitem__(self, index):
        return _T(self.a[index.a if isinstance(index, _T) else index])

    def item(self):
        return self.a.item()


torch = type("torch", (), {"int64": "int64"})


def compute_loss(token_loss_rows, mask_rows):
    token_loss, loss_mask = _T(token_loss_rows), _T(numpy.asarray(mask_rows, dtype=bool))
    token_count = loss_mask.sum(dtype=torch.int64)
    loss_sum = token_loss[loss_mask].sum()
    return loss_sum, token_count


STEP_LOOP = "global_step_token_count = step_local_token_count.clone()"
