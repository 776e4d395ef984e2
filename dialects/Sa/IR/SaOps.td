//===- SaOps.td - Operations of the sa dialect ----------------*- tablegen -*-===//

#ifndef KILN_DIALECT_SA_IR_SAOPS_TD
#define KILN_DIALECT_SA_IR_SAOPS_TD

include "dialects/Sa/IR/SaBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/IR/BuiltinAttributes.td"

def Sa_ProgramOp : Sa_Op<"program", [Symbol, SymbolTable, NoTerminator,
    SingleBlock, IsolatedFromAbove, NoRegionArguments]> {
  let summary = "a compiled training step for one core of the target";
  let description = [{
    Holds the buffers and, in program order, the instructions of one step.
    `batch` is the number of examples a step consumes (for images/s);
    `target` is the configuration it was compiled for, with the integer
    fields `mxu_count`, `array_rows`, `array_cols`, `onchip_bytes`,
    `vector_lanes`, `vector_latency`, `dma_latency`, `dma_overhead` and the
    float fields `clock_hz`, `hbm_bytes_per_s`, `ici_bytes_per_s`, and the
    string `name`.

    ```mlir
    sa.program @fmnist batch 16 target {name = "tpuv3", mxu_count = 2 : i64, ...} {
      sa.buffer @x : hbm f32 [16, 28, 28, 1] role input binding "arg0"
      ...
    }
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    ConfinedAttr<I64Attr, [IntPositive]>:$batch,
    DictionaryAttr:$target
  );
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name `batch` $batch `target` $target attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// An integer field of the target; 0 if missing.
    int64_t getTargetInt(llvm::StringRef name);
  }];
}

def Sa_BufferOp : Sa_Op<"buffer", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "declares a buffer in HBM or on-chip memory";
  let description = [{
    A buffer of `shape` elements of `dtype`. On-chip buffers give their byte
    `offset` in on-chip memory. Host-visible buffers (inputs, outputs, model
    parameters and state) have a `binding`: "argN"/"resultN" or the
    variable's name; variables also carry their initializer, constants their
    `value`.

    ```mlir
    sa.buffer @images : hbm f32 [16, 28, 28, 1] role input binding "arg0"
    sa.buffer @conv1.weight : hbm f32 [3, 3, 1, 16] role parameter binding "conv1.weight" init he_normal
    sa.buffer @stage0 : onchip f32 [512, 16] offset 65536
    sa.buffer @one : hbm f32 [1] role constant value dense<1.000000e+00> : tensor<1xf32>
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    Sa_Space:$space,
    Sa_DType:$dtype,
    DenseI64ArrayAttr:$shape,
    OptionalAttr<ConfinedAttr<I64Attr, [IntNonNegative]>>:$offset,
    DefaultValuedAttr<Sa_Role, "::kiln::sa::Role::Temp">:$role,
    OptionalAttr<StrAttr>:$binding,
    DefaultValuedAttr<Sa_Init, "::kiln::sa::Init::None">:$init,
    OptionalAttr<F32Attr>:$init_std,
    OptionalAttr<FloatElementsAttr<32>>:$value,
    DefaultValuedAttr<Sa_HostLayout, "::kiln::sa::HostLayout::Identity">:$host_layout
  );
  let assemblyFormat = [{
    $sym_name `:` $space $dtype $shape (`offset` $offset^)?
    (`role` $role^)? (`binding` $binding^)? (`init` $init^)? (`std` $init_std^)?
    (`value` $value^)? (`layout` $host_layout^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumElements();
    int64_t getElementBytes();
  }];
}

def Sa_SourceOp : Sa_Op<"source", [HasParent<"ProgramOp">]> {
  let summary = "names the kiln op the following instructions implement";
  let description = [{
    Instructions up to the next `sa.source` are reported under this op kind
    and layer.

    ```mlir
    sa.source "conv2d" "layer1.0.conv1"
    ```
  }];
  let arguments = (ins StrAttr:$kind, StrAttr:$layer);
  let assemblyFormat = "$kind $layer attr-dict";
}

class Sa_InstrOp<string mnemonic, list<Trait> traits = []>
    : Sa_Op<mnemonic, !listconcat([HasParent<"ProgramOp">,
        DeclareOpInterfaceMethods<SymbolUserOpInterface>], traits)> {
  let results = (outs Sa_TokenType:$token);
}

def Sa_DmaOp : Sa_InstrOp<"dma"> {
  let summary = "copies a view between HBM and on-chip memory";
  let description = [{
    Copies `src(i, j)` to `dst(i, j)` for every element of the views, which
    have the same shape; reads out of bounds give zeros. One buffer is in
    HBM, the other on chip, and both have the same element type (only the
    vector unit converts).

    ```mlir
    %0 = sa.dma @x #sa.view<[1] x [64], base 0, (stride 1, offset 0, bound 64, row [0], col [1])>
        to @s #sa.view<[1] x [64], base 0, (stride 1, offset 0, bound 64, row [0], col [1])>
    ```
  }];
  let arguments = (ins
    FlatSymbolRefAttr:$src, Sa_ViewAttr:$src_view,
    FlatSymbolRefAttr:$dst, Sa_ViewAttr:$dst_view,
    Variadic<Sa_TokenType>:$deps
  );
  let assemblyFormat = [{
    $src $src_view `to` $dst $dst_view (`after` $deps^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Sa_MatmulOp : Sa_InstrOp<"matmul"> {
  let summary = "one weight-stationary pass of a matrix unit";
  let description = [{
    Loads the k x n view `rhs` (k <= array rows, n <= array columns) into
    matrix unit `mxu`, streams the m rows of `lhs` (m x k) through it and
    writes (or with `accumulate` adds) the fp32 results to `out` (m x n):
    `out(i, j) (+)= sum_p bf16(lhs(i, p)) * bf16(rhs(p, j))`, accumulated in
    fp32. All operands are on chip; `out` is f32.

    ```mlir
    %2 = sa.matmul mxu 0 @x #sa.view<...>, @w #sa.view<...> into @acc #sa.view<...>
        accumulate after %0, %1
    ```
  }];
  let arguments = (ins
    ConfinedAttr<I64Attr, [IntNonNegative]>:$mxu,
    FlatSymbolRefAttr:$lhs, Sa_ViewAttr:$lhs_view,
    FlatSymbolRefAttr:$rhs, Sa_ViewAttr:$rhs_view,
    FlatSymbolRefAttr:$out, Sa_ViewAttr:$out_view,
    UnitAttr:$accumulate,
    Variadic<Sa_TokenType>:$deps
  );
  let assemblyFormat = [{
    `mxu` $mxu $lhs $lhs_view `,` $rhs $rhs_view `into` $out $out_view
    (`accumulate` $accumulate^)? (`after` $deps^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Sa_VectorOp : Sa_InstrOp<"vector"> {
  let summary = "an operation of the vector unit";
  let description = [{
    Applies `kind` to `rows` x `channels` elements; each operand is a buffer
    and an element offset, all on chip. The operands and attributes of each
    kind are listed in systolic/include/kiln/sim/Isa.h (for example
    `channel_affine` takes x, scale and shift and one integer attribute, 1
    to apply a ReLU).

    ```mlir
    %3 = sa.vector channel_affine (@acc[0], @scale[0], @shift[0]) -> (@y[0])
        rows 784 channels 16 iattrs [1] after %2
    ```
  }];
  let arguments = (ins
    Sa_VectorOpKind:$kind,
    SymbolRefArrayAttr:$srcs, DenseI64ArrayAttr:$src_offsets,
    SymbolRefArrayAttr:$dsts, DenseI64ArrayAttr:$dst_offsets,
    ConfinedAttr<I64Attr, [IntNonNegative]>:$rows,
    ConfinedAttr<I64Attr, [IntNonNegative]>:$channels,
    DefaultValuedAttr<DenseF64ArrayAttr, "{}">:$fattrs,
    DefaultValuedAttr<DenseI64ArrayAttr, "{}">:$iattrs,
    Variadic<Sa_TokenType>:$deps
  );
  let assemblyFormat = [{
    $kind custom<Regions>($srcs, $src_offsets) `->` custom<Regions>($dsts, $dst_offsets)
    `rows` $rows `channels` $channels (`fattrs` $fattrs^)? (`iattrs` $iattrs^)?
    (`after` $deps^)? attr-dict
  }];
  let hasVerifier = 1;
}

def Sa_AllReduceOp : Sa_InstrOp<"allreduce"> {
  let summary = "averages buffers over the data-parallel ranks";
  let description = [{
    Performed by the host's collective; the identity with one rank.

    ```mlir
    %4 = sa.allreduce [@conv1.weight.grad, @fc.bias.grad] after %3
    ```
  }];
  let arguments = (ins SymbolRefArrayAttr:$buffers, Variadic<Sa_TokenType>:$deps);
  let assemblyFormat = "$buffers (`after` $deps^)? attr-dict";
}

#endif // KILN_DIALECT_SA_IR_SAOPS_TD
