package dev.muon.internal;

import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.StringTensorDictItem;
import org.bytedeco.pytorch.Tensor;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * libtorch's {@code named_parameters()} dict as an ordered Java map: every entry point that takes a module's
 * parameters by name reads them in the module's registration order, which is the order of tables and files.
 */
public final class NamedParameters {
    private NamedParameters() {
    }

    /**
     * The parameters of {@code namedParameters} in their order.
     *
     * @param namedParameters a module's {@code named_parameters()}
     * @return a new ordered map of name to tensor
     * @throws NullPointerException if the argument is null
     */
    public static Map<String, Tensor> ordered(StringTensorDict namedParameters) {
        Objects.requireNonNull(namedParameters, "namedParameters must not be null");
        Map<String, Tensor> map = new LinkedHashMap<>();
        for (long i = 0; i < namedParameters.size(); i++) {
            StringTensorDictItem item = namedParameters.get(i);
            map.put(item.key().getString(), item.value());
        }
        return map;
    }
}
