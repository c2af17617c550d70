//! The meaning of `Op::Conv`, XLA's general convolution in one fixed layout: the input is
//! `[batch, channels, spatial...]`, the kernel `[out_channels, channels / feature_groups,
//! spatial...]` and the result `[batch / batch_groups, out_channels, spatial...]`, all
//! contiguous. Nx's permutations, padding modes and dtypes are the frontend's
//! (`ops/conv.rs`); the gradients are convolutions of this same op (`jit/vjp/conv.rs`).
//!
//! An output entry at spatial position `y` reads, along each spatial axis, the input at
//! `y * stride + k * kernel_dilation - padding_lo` of the input as dilated (with
//! `input_dilation - 1` zeros between entries): that place holds an input entry only where it
//! divides by the dilation and falls inside the input; elsewhere it is padding, zero.

/// The most spatial axes a convolution has (the cuda kernel's fixed-size arguments).
pub const MAX_SPATIAL: usize = 8;

/// A convolution's static arguments, validated by the frontend: every list has one entry per
/// spatial axis, strides and dilations are at least 1, the groups divide what they split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvDims {
    /// The input's batch size.
    pub batch: usize,
    /// The input's channels.
    pub channels: usize,
    /// The kernel's output channels (the result's channels).
    pub out_channels: usize,
    /// The input's spatial sizes.
    pub input: Vec<usize>,
    /// The kernel's spatial sizes (not dilated).
    pub kernel: Vec<usize>,
    /// The result's spatial sizes.
    pub output: Vec<usize>,
    /// The window's step along each axis.
    pub strides: Vec<usize>,
    /// The padding before each axis (negative crops); the padding after is in `output`.
    pub padding_lo: Vec<i64>,
    /// One more than the zeros between input entries.
    pub input_dilation: Vec<usize>,
    /// One more than the zeros between kernel entries.
    pub kernel_dilation: Vec<usize>,
    /// Channel groups, each convolved with its own slice of the output channels.
    pub feature_groups: usize,
    /// Batch groups, each convolved with its own slice of the output channels.
    pub batch_groups: usize,
}

impl ConvDims {
    /// The result's batch size.
    pub fn out_batch(&self) -> usize {
        self.batch / self.batch_groups.max(1)
    }

    /// The kernel's input channels.
    pub fn group_channels(&self) -> usize {
        self.channels / self.feature_groups.max(1)
    }

    /// The result's shape.
    pub fn out_shape(&self) -> Vec<usize> {
        let mut shape = vec![self.out_batch(), self.out_channels];
        shape.extend_from_slice(&self.output);
        shape
    }

    /// The input position along spatial axis `axis` that kernel tap `k` reads for output
    /// position `y`, or `None` where it reads padding (or a dilation's hole).
    #[inline(always)]
    pub fn source(&self, axis: usize, y: usize, k: usize) -> Option<usize> {
        let at = (y * self.strides[axis]) as i64 + (k * self.kernel_dilation[axis]) as i64
            - self.padding_lo[axis];
        let at = usize::try_from(at).ok()?;
        let d = self.input_dilation[axis];
        (at % d == 0 && at / d < self.input[axis]).then_some(at / d)
    }

    /// For output channel `o`: the first input channel its feature group reads, and the first
    /// input batch entry its batch group reads (added to the output batch entry).
    #[inline(always)]
    pub fn groups_of(&self, o: usize) -> (usize, usize) {
        let per_feature_group = self.out_channels / self.feature_groups.max(1);
        let per_batch_group = self.out_channels / self.batch_groups.max(1);
        (
            (o / per_feature_group.max(1)) * self.group_channels(),
            (o / per_batch_group.max(1)) * self.out_batch(),
        )
    }
}
