package dev.muon.internal;

/**
 * A switch of this library given as a system property ({@code -Ddev.muon.native.disable=true}): unset or
 * {@code false} is off and {@code true} is on, in any case. Any other value is refused by name, where
 * {@link Boolean#getBoolean} would read it as off, so that a switch someone meant to set is never silently left off.
 */
public final class SystemSwitch {
    private SystemSwitch() {
    }

    /**
     * Reads a switch.
     *
     * @param property the property's name
     * @return whether it is set to {@code true}
     * @throws IllegalArgumentException naming the property and its value, if it is set to anything but {@code true}
     *                                  or {@code false}
     */
    public static boolean isOn(String property) {
        return parse(property, System.getProperty(property));
    }

    /**
     * {@link #isOn} on a value read before (a probe's input).
     *
     * @param property the property's name, for the message
     * @param value    its value, or null if unset
     * @return whether it is {@code true}
     * @throws IllegalArgumentException naming the property and the value, if it is anything but {@code true} or
     *                                  {@code false}
     */
    public static boolean parse(String property, String value) {
        if (value == null || value.equalsIgnoreCase("false")) {
            return false;
        }
        if (value.equalsIgnoreCase("true")) {
            return true;
        }
        throw new IllegalArgumentException("-D" + property + " must be true or false, got '" + value + "'");
    }
}
