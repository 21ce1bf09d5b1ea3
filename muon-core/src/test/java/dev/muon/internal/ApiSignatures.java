package dev.muon.internal;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which public signatures of a module name a {@code dev.muon.internal} type: a user who can call a method can
 * name its parameter and return types, so an internal type there is API in all but name. Every public type of the
 * given packages is read by reflection (top-level and nested ones reachable through public types, interfaces
 * included): its supertypes, its type parameters' bounds, and each public or protected field, constructor and method
 * (inherited public ones included), down through generic arguments, wildcards, arrays and bounds. Shared with
 * muon-cuda's tests through the test jar.
 */
public final class ApiSignatures {
    private static final String INTERNAL = "dev.muon.internal";

    private ApiSignatures() {
    }

    /**
     * Checks a module as muon-core's {@code ApiSignaturesTest} checks muon-core: its API packages, found in its
     * compiled classes, include {@code apiPackage}, and no public signature in them names an internal type.
     *
     * @param ofModule   a class of the module
     * @param apiPackage a package the module's API packages must include
     * @throws Exception if the classes cannot be found or read
     */
    public static void assertNoneNamesAnInternalType(Class<?> ofModule, String apiPackage) throws Exception {
        Path classes = NativesFirst.classesOf(ofModule);
        String[] packages = NativesFirst.apiPackages(classes);
        assertTrue(List.of(packages).contains(apiPackage), List.of(packages).toString());
        assertEquals(List.of(), namingInternalTypes(classes, packages));
    }

    /**
     * Every place where a public signature in the given packages names an internal type, one line each:
     * {@code dev.muon.orthogonalize.NewtonSchulz.orthogonalizeWith(..) parameter 2: dev.muon.internal.X}.
     *
     * @param classes  the module's compiled classes, a folder
     * @param packages the packages to read, not their sub-packages
     * @return the findings, sorted; empty when no public signature names an internal type
     * @throws IOException if the folder cannot be read or a class cannot be loaded
     */
    public static List<String> namingInternalTypes(Path classes, String... packages) throws IOException {
        List<String> found = new ArrayList<>();
        for (String pkg : packages) {
            try (Stream<Path> files = Files.list(classes.resolve(pkg.replace('.', '/')))) {
                for (Path file : files.filter(f -> f.toString().endsWith(".class")).sorted().toList()) {
                    String simple = file.getFileName().toString().replace(".class", "");
                    if (simple.equals("package-info")) {
                        continue;
                    }
                    Class<?> type;
                    try {
                        type = Class.forName(pkg + "." + simple, false, ApiSignatures.class.getClassLoader());
                    } catch (ClassNotFoundException e) {
                        throw new IOException("cannot load " + pkg + "." + simple + " from " + file, e);
                    }
                    if (isPublicApi(type)) {
                        check(type, found);
                    }
                }
            }
        }
        return found.stream().sorted().toList();
    }

    /** Public, and nested (if it is) only in public types: a type a user can name. */
    private static boolean isPublicApi(Class<?> type) {
        if (type.isAnonymousClass() || type.isLocalClass() || type.isSynthetic()) {
            return false;
        }
        for (Class<?> t = type; t != null; t = t.getEnclosingClass()) {
            if (!Modifier.isPublic(t.getModifiers())) {
                return false;
            }
        }
        return true;
    }

    private static void check(Class<?> type, List<String> found) {
        String name = type.getName();
        if (type.getGenericSuperclass() != null) {
            report(name + " superclass", type.getGenericSuperclass(), found);
        }
        for (Type i : type.getGenericInterfaces()) {
            report(name + " interface", i, found);
        }
        for (TypeVariable<?> v : type.getTypeParameters()) {
            report(name + " type parameter " + v.getName(), v, found);
        }
        for (Field f : type.getDeclaredFields()) {
            if (visible(f.getModifiers()) && !f.isSynthetic()) {
                report(name + "." + f.getName() + " field", f.getGenericType(), found);
            }
        }
        for (Constructor<?> c : type.getDeclaredConstructors()) {
            if (visible(c.getModifiers()) && !c.isSynthetic()) {
                check(name + ".<init>(..)", c, found);
            }
        }
        Set<Method> methods = new HashSet<>(List.of(type.getMethods()));
        for (Method m : type.getDeclaredMethods()) {
            if (Modifier.isProtected(m.getModifiers())) {
                methods.add(m);
            }
        }
        for (Method m : methods) {
            if (m.isSynthetic() || m.isBridge()) {
                continue;
            }
            String where = name + "." + m.getName() + "(..)";
            report(where + " return", m.getGenericReturnType(), found);
            check(where, m, found);
        }
    }

    private static void check(String where, Executable e, List<String> found) {
        for (TypeVariable<?> v : e.getTypeParameters()) {
            report(where + " type parameter " + v.getName(), v, found);
        }
        Type[] parameters = e.getGenericParameterTypes();
        for (int i = 0; i < parameters.length; i++) {
            report(where + " parameter " + (i + 1), parameters[i], found);
        }
        for (Type t : e.getGenericExceptionTypes()) {
            report(where + " throws", t, found);
        }
    }

    private static boolean visible(int modifiers) {
        return Modifier.isPublic(modifiers) || Modifier.isProtected(modifiers);
    }

    private static void report(String where, Type type, List<String> found) {
        List<String> internal = new ArrayList<>();
        collect(type, internal, new HashSet<>());
        for (String t : internal) {
            found.add(where + ": " + t);
        }
    }

    /** The internal classes a type names, through generic arguments, wildcards, arrays and type-variable bounds. */
    static void collect(Type type, List<String> internal, Set<Type> seen) {
        if (!seen.add(type)) {
            return;
        }
        if (type instanceof Class<?> c) {
            while (c.isArray()) {
                c = c.getComponentType();
            }
            if (c.getPackageName().equals(INTERNAL)) {
                internal.add(c.getName());
            }
        } else if (type instanceof ParameterizedType p) {
            collect(p.getRawType(), internal, seen);
            if (p.getOwnerType() != null) {
                collect(p.getOwnerType(), internal, seen);
            }
            for (Type a : p.getActualTypeArguments()) {
                collect(a, internal, seen);
            }
        } else if (type instanceof GenericArrayType a) {
            collect(a.getGenericComponentType(), internal, seen);
        } else if (type instanceof WildcardType w) {
            for (Type b : w.getUpperBounds()) {
                collect(b, internal, seen);
            }
            for (Type b : w.getLowerBounds()) {
                collect(b, internal, seen);
            }
        } else if (type instanceof TypeVariable<?> v) {
            for (Type b : v.getBounds()) {
                collect(b, internal, seen);
            }
        }
    }
}
