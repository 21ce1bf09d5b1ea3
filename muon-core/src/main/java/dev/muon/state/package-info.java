/**
 * An optimizer's state as one immutable value and its two files. {@link dev.muon.state.OptimizerState} holds the
 * step count, the groups' configs, the schedule record and one {@link dev.muon.state.ParameterEntry} per named
 * parameter (its value, the Muon state buffers its update declares as {@link dev.muon.BufferSpec}s, AdamW's
 * moments); {@link dev.muon.state.StateFit} lists every difference between a state and an optimizer. The codecs,
 * {@link dev.muon.state.CheckpointFile} (muon-core's safetensors file with a SHA-256) and
 * {@link dev.muon.state.TorchStateFile} (PyTorch's {@code optimizer.state_dict()} as {@code torch.save} writes it),
 * turn a state into bytes and back; the byte layer they alone use (JSON, safetensors, a weights-only unpickler, the
 * pickle writer, the atomic file) is package-private here. Reading a file runs nothing from it, and every length,
 * offset and stride is checked before libtorch sees a byte. Nothing here holds an optimizer.
 *
 * <p>The checkpoint codec holds no libtorch type: {@link dev.muon.state.CheckpointBytes} writes and reads the file as
 * a {@link dev.muon.state.CheckpointDocument} and {@link dev.muon.state.RawTensor}s (dtype, shape, little-endian
 * bytes), with every check; {@code CheckpointBytes.readFor} fits a file to an optimizer's document (the
 * package-private {@code CheckpointFit}), and {@code TensorNames} alone spells a tensor's name; the byte layer
 * serves any module's tensors through one package-private interface. {@code CheckpointFile} and {@code StateFit} are
 * their libtorch side; muon-djl, which cannot load libtorch's bindings, uses them directly, so both modules write one
 * format and refuse a file with the same messages.
 */
package dev.muon.state;
