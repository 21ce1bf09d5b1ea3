package dev.muon.internal;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Which public types of a module, when a user touches one of them first, leave libtorch's natives to JavaCPP's
 * unsafe loading order ({@link TorchNatives} says why that crashes): each type is initialized in a class loader of
 * its own, holding fresh copies of our classes, and is listed if that loader's {@link TorchNatives#extract()} was
 * not called. Shared with muon-cuda's tests through the test jar.
 */
public final class NativesFirst {
    private NativesFirst() {
    }

    /**
     * Where {@code type} was loaded from: the compiled classes of its module, a folder.
     *
     * @param type a class of the module
     * @return the folder
     * @throws java.net.URISyntaxException if the location is no URI
     */
    public static Path classesOf(Class<?> type) throws java.net.URISyntaxException {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI());
    }

    /**
     * The API packages of a module: every package under {@code dev.muon} in its compiled classes that holds a class,
     * but those named {@code internal} ({@code dev.muon.internal}, {@code dev.muon.cuda.internal}), which are not
     * API. Found, not listed, so that a package added later is checked too.
     *
     * @param classes the module's compiled classes, a folder
     * @return the packages' names, sorted
     * @throws IOException if the folder cannot be read
     */
    public static String[] apiPackages(Path classes) throws IOException {
        Path root = classes.resolve("dev").resolve("muon");
        try (Stream<Path> dirs = Files.walk(root)) {
            return dirs.filter(Files::isDirectory)
                    .filter(d -> !isInternal(root.relativize(d)))
                    .filter(NativesFirst::holdsClasses)
                    .map(d -> classes.relativize(d).toString().replace(java.io.File.separatorChar, '.'))
                    .sorted().toArray(String[]::new);
        }
    }

    private static boolean isInternal(Path relative) {
        for (Path segment : relative) {
            if (segment.toString().equals("internal")) {
                return true;
            }
        }
        return false;
    }

    private static boolean holdsClasses(Path dir) {
        try (Stream<Path> files = Files.list(dir)) {
            return files.anyMatch(f -> f.toString().endsWith(".class"));
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * The public classes, records and enums of the given packages that a program can touch first, as found in a
     * folder of compiled classes: every top-level one, and those nested in public types that have a public
     * constructor or static member. Interfaces are left out: touching one runs none of their code, and their static
     * methods return types of this list.
     *
     * @param classes  the module's compiled classes, a folder
     * @param packages the packages to list, not their sub-packages
     * @return the types' binary names, sorted
     * @throws IOException if the folder cannot be read
     */
    public static List<String> publicTypes(Path classes, String... packages) throws IOException {
        List<String> names = new ArrayList<>();
        for (String pkg : packages) {
            Path dir = classes.resolve(pkg.replace('.', '/'));
            try (Stream<Path> files = Files.list(dir)) {
                for (Path file : files.filter(f -> f.toString().endsWith(".class")).sorted().toList()) {
                    String simple = file.getFileName().toString().replace(".class", "");
                    String name = pkg + "." + simple;
                    if (simple.equals("package-info")) {
                        continue;
                    }
                    Class<?> type;
                    try {
                        type = Class.forName(name, false, NativesFirst.class.getClassLoader());
                    } catch (ClassNotFoundException e) {
                        throw new IOException("cannot load " + name + " from " + file, e);
                    }
                    if (isReachablePublicType(type)) {
                        names.add(name);
                    }
                }
            }
        }
        return names;
    }

    private static boolean isReachablePublicType(Class<?> type) {
        if (type.isInterface() || type.isAnonymousClass() || type.isLocalClass() || type.isSynthetic()) {
            return false;
        }
        for (Class<?> t = type; t != null; t = t.getEnclosingClass()) {
            if (!Modifier.isPublic(t.getModifiers())) {
                return false;
            }
        }
        // A nested type is touched first only through its own constructor or static members; one reached only
        // from its outer type (a builder from Muon.builder()) comes after the outer type's initialization.
        return type.getEnclosingClass() == null || type.getConstructors().length > 0
                || Stream.of(type.getMethods()).anyMatch(m -> isStaticOf(m, type))
                || Stream.of(type.getFields()).anyMatch(f -> isStaticOf(f, type));
    }

    private static boolean isStaticOf(java.lang.reflect.Member member, Class<?> type) {
        return Modifier.isStatic(member.getModifiers()) && member.getDeclaringClass() == type;
    }

    /**
     * The types whose initialization does not call {@link TorchNatives#extract()}.
     *
     * @param classes the compiled classes of the types' module (a folder or jar), loaded afresh for each type
     * @param types   binary names of the types
     * @return the names of those that do not, each with what went wrong if its initialization failed
     * @throws Exception if reflection on the fresh copies fails
     */
    public static List<String> withoutExtract(Path classes, List<String> types) throws Exception {
        URL core = TorchNatives.class.getProtectionDomain().getCodeSource().getLocation();
        List<String> missing = new ArrayList<>();
        for (String type : types) {
            try (Isolated loader = new Isolated(new URL[] {classes.toUri().toURL(), core})) {
                Throwable failure = null;
                try {
                    Class.forName(type, true, loader);
                } catch (LinkageError e) {
                    // A type whose initialization then fails (a JNI library already loaded by the test's own
                    // loader) still shows whether extract() came first.
                    failure = e;
                }
                Method requested = Class.forName(TorchNatives.class.getName(), true, loader)
                        .getDeclaredMethod("requested");
                requested.setAccessible(true);
                if (!(boolean) requested.invoke(null)) {
                    missing.add(type + (failure == null ? "" : " (initialization failed: " + failure + ")"));
                }
            }
        }
        return missing;
    }

    /** Loads {@code dev.muon} classes from its own URLs, child first; everything else from the test's loader. */
    private static final class Isolated extends URLClassLoader {
        Isolated(URL[] urls) {
            super(urls, NativesFirst.class.getClassLoader());
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.startsWith("dev.muon.")) {
                return super.loadClass(name, resolve);
            }
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) {
                    try {
                        c = findClass(name);
                    } catch (ClassNotFoundException notOurs) {
                        c = super.loadClass(name, false);
                    }
                }
                if (resolve) {
                    resolveClass(c);
                }
                return c;
            }
        }
    }
}
