package dev.muon.djl;

import ai.djl.Device;

/**
 * One parameter on one device: the unit that DJL's {@code ParameterStore} updates (once per device, with the same
 * gradient) and the unit that owns optimizer state, so that every device's copy moves by the same update.
 *
 * @param parameterId the parameter's DJL id ({@code Parameter.getId()})
 * @param device      the device of the copy being updated
 */
record ParameterKey(String parameterId, Device device) {
}
