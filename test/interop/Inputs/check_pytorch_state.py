"""PyTorch's side of test/interop/pytorch-state.test, with the real
safetensors package (PyPI, pinned) and Debian's torchvision:

  eval STATE RUN_DIR     load a converted Kiln checkpoint into torchvision's
                         resnet18(num_classes=10) with strict=True; its top-1
                         on the validation shards must equal the one Kiln's
                         eval wrote to RUN_DIR/metrics.jsonl
  export SEED OUT        save a seeded torchvision resnet18(num_classes=10),
                         briefly trained so its predictions vary, as a state
                         dict (safetensors.torch.save_file)
  drop|add IN OUT NAME   IN without tensor NAME, or with an extra one, for
                         the error cases (metadata kept)

Pixels are normalized as the executable's --mean 127.5 --std 64 does.
"""

import json
import os
import sys

import numpy as np
import safetensors
import safetensors.numpy
import safetensors.torch
import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_shards  # noqa: E402


def batches(data, split, label_offset=0):
    images, labels = [], []
    for pixels, h, w, c, label in raw_shards.examples(data, split):
        x = np.frombuffer(pixels, np.uint8).reshape(h, w, c).astype(np.float32)
        images.append((x - 127.5) / 64)
        labels.append(label - label_offset)
    x = torch.from_numpy(np.stack(images)).permute(0, 3, 1, 2).contiguous()
    return x, torch.tensor(labels)


def top1(model, data):
    x, y = batches(data, "validation")
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item(), len(y)


def main():
    mode, data = sys.argv[1], os.environ.get("SHARDS")
    torch.set_num_threads(1)
    if mode == "eval":
        state, run = sys.argv[2], sys.argv[3]
        model = torchvision.models.resnet18(num_classes=10)
        model.load_state_dict(safetensors.torch.load_file(state), strict=True)
        torch_top1, n = top1(model, data)
        rows = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl"))]
        kiln_top1 = [r for r in rows if r["kind"] == "eval"][-1]["top1"]
        print(f"pytorch top-1 {torch_top1:.4f} kiln top-1 {kiln_top1:.4f} on {n} examples")
        if abs(torch_top1 - kiln_top1) > 1e-6:
            raise SystemExit("top-1 differs")
    elif mode == "export":
        seed, out = int(sys.argv[2]), sys.argv[3]
        torch.manual_seed(seed)
        model = torchvision.models.resnet18(num_classes=10)
        x, y = batches(data, "train")
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        model.train()
        for i in range(0, len(y), 4):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x[i:i + 4]), y[i:i + 4]).backward()
            optimizer.step()
        safetensors.torch.save_file(model.state_dict(), out)
    elif mode in ("drop", "add"):
        src, out, name = sys.argv[2:5]
        with safetensors.safe_open(src, "np") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}
            metadata = f.metadata()
        if mode == "drop":
            del tensors[name]
        else:
            tensors[name] = np.zeros([2], np.float32)
        safetensors.numpy.save_file(tensors, out, metadata=metadata)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
