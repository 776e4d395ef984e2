//===- main.cpp - kiln-checkpoint: Kiln checkpoints <-> PyTorch -----------===//
//
// A thin main over kiln/rt/pytorch_state.h.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/pytorch_state.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace {

const char *kUsage =
    "usage: kiln-checkpoint to-pytorch CHECKPOINT -o STATE.safetensors\n"
    "       kiln-checkpoint from-pytorch STATE.safetensors -o VALUES.safetensors\n"
    "\n"
    "to-pytorch    a Kiln checkpoint as a PyTorch state dict: OIHW\n"
    "              convolution weights, [out, in] linear weights, batch\n"
    "              norm's num_batches_tracked (the step), no optimizer state;\n"
    "              torchvision's load_state_dict(strict=True) takes it\n"
    "              (safetensors.torch.load_file)\n"
    "from-pytorch  a PyTorch state dict (safetensors.torch.save_file) in\n"
    "              Kiln's layouts, for the executable's --init-from\n";

int fail(const std::string &message, int status = 1) {
  std::fprintf(stderr, "kiln-checkpoint: error: %s\n", message.c_str());
  if (status == 2)
    std::fprintf(stderr, "\n%s", kUsage);
  return status;
}

} // namespace

int main(int argc, char **argv) {
  namespace st = kiln::rt::safetensors;
  if (argc == 2 && (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h"))) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (argc != 5 || std::strcmp(argv[3], "-o") != 0)
    return fail("expected a mode, an input and -o OUTPUT", 2);
  std::string mode = argv[1], input = argv[2], output = argv[4];
  if (mode != "to-pytorch" && mode != "from-pytorch")
    return fail("unknown mode '" + mode + "'", 2);
  st::File in;
  if (kiln::Status s = st::read(input, in); !s.isOk())
    return fail(s.message());
  kiln::StatusOr<st::File> out = mode == "to-pytorch"
                                     ? st::toPyTorchState(in, input)
                                     : st::fromPyTorchState(in, input);
  if (!out.isOk())
    return fail(out.status().message());
  if (kiln::Status s = st::write(output, *out); !s.isOk())
    return fail(s.message());
  std::printf("kiln-checkpoint: wrote %zu tensors to %s\n", out->tensors.size(),
              output.c_str());
  return 0;
}
