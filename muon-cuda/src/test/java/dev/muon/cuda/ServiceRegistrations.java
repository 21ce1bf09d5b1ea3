package dev.muon.cuda;

import java.util.List;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** The ServiceLoader registrations (META-INF/services) of muon-cuda's providers. */
final class ServiceRegistrations {
    private ServiceRegistrations() {
    }

    /** The {@link ServiceLoader} of {@code service} finds {@code provider}; the message lists what it found. */
    static <S> void assertFound(Class<S> service, Class<? extends S> provider) {
        List<String> names = ServiceLoader.load(service).stream()
                .map(p -> p.type().getName()).collect(Collectors.toList());
        assertTrue(names.contains(provider.getName()), names.toString());
    }
}
