package dev.muon.release;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

import javax.xml.parsers.DocumentBuilderFactory;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarFile;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What Maven Central asks of every published artifact, short of the signature: POM metadata (name, description, url,
 * licenses, developers, scm), sources and javadoc jars, plus our own rules: the LICENSE in every jar, a stable module
 * name, and a BOM that agrees with the build.
 */
class ReleaseMetadataIT {
    private static final List<String> SHARED = List.of("url", "licenses", "developers", "scm");

    static Stream<Arguments> publishedModules() {
        return Stream.of(Arguments.of("muon-core", "dev.muon.core"), Arguments.of("muon-cuda", "dev.muon.cuda"),
                Arguments.of("muon-djl", "dev.muon.djl"), Arguments.of("muon-spark", "dev.muon.spark"));
    }

    @Test
    void parentPom_hasEverythingCentralAsks() throws Exception {
        Element parent = pom(Outer.root().resolve("pom.xml"));
        for (String field : List.of("name", "description", "url")) {
            assertFalse(text(parent, field).isBlank(), "the parent POM has no <" + field + ">");
        }
        Element license = child(child(parent, "licenses"), "license");
        assertFalse(text(license, "name").isBlank(), "a license needs a name");
        assertTrue(text(license, "url").startsWith("https://"), "a license needs a url");
        assertFalse(text(child(child(parent, "developers"), "developer"), "name").isBlank(), "a developer needs a name");
        Element scm = child(parent, "scm");
        for (String field : List.of("url", "connection", "developerConnection")) {
            assertFalse(text(scm, field).isBlank(), "<scm> has no <" + field + ">");
        }
        assertFalse(text(child(parent, "properties"), "project.build.outputTimestamp").isBlank(),
                "no project.build.outputTimestamp: jars would carry the build time");
    }

    @Test
    void bom_repeatsTheParentsMetadata_andItsVersions() throws Exception {
        Element parent = pom(Outer.root().resolve("pom.xml"));
        Element bom = pom(Outer.root().resolve("muon-bom").resolve("pom.xml"));
        assertEquals(Outer.version(), text(bom, "version"), "muon-bom's version");
        for (String field : SHARED) {
            assertEquals(flatten(child(parent, field)), flatten(child(bom, field)), "<" + field + "> of muon-bom");
        }
        Element props = child(parent, "properties");
        assertEquals(text(props, "pytorch.version"), managedVersion(bom, "pytorch-platform"));
        assertEquals(text(props, "pytorch.version"), managedVersion(bom, "pytorch"));
        assertEquals(text(props, "javacpp.version"), managedVersion(bom, "javacpp-platform"));
        assertEquals(text(props, "javacpp.version"), managedVersion(bom, "javacpp"));
        assertEquals(text(props, "openblas.version"), managedVersion(bom, "openblas-platform"));
        assertEquals(text(props, "openblas.version"), managedVersion(bom, "openblas"));
        assertEquals("${project.version}", managedVersion(bom, "muon-core"));
        assertEquals("${project.version}", managedVersion(bom, "muon-cuda"));
        assertEquals("${project.version}", managedVersion(bom, "muon-djl"));
        assertEquals("${project.version}", managedVersion(bom, "muon-spark"));
    }

    @ParameterizedTest
    @MethodSource("publishedModules")
    void publishedModule_hasNameAndDescription(String module, String moduleName) throws Exception {
        Element pom = pom(Outer.root().resolve(module).resolve("pom.xml"));
        assertEquals(module, text(pom, "artifactId"));
        assertFalse(text(pom, "name").isBlank(), module + " has no <name>");
        assertFalse(text(pom, "description").isBlank(), module + " has no <description>");
    }

    @ParameterizedTest
    @MethodSource("publishedModules")
    void mainJar_namesItsModule_andCarriesTheLicense(String module, String moduleName) throws IOException {
        try (JarFile jar = new JarFile(Outer.artifact(module, "").toFile())) {
            assertEquals(moduleName, jar.getManifest().getMainAttributes().getValue("Automatic-Module-Name"));
        }
        assertLicense(Outer.artifact(module, ""));
    }

    @ParameterizedTest
    @MethodSource("publishedModules")
    void sourcesJar_holdsEveryMainSource_andTheLicense(String module, String moduleName) throws IOException {
        Path sources = Outer.root().resolve(module).resolve("src").resolve("main").resolve("java");
        List<String> expected = new ArrayList<>();
        try (Stream<Path> files = Files.walk(sources)) {
            files.filter(f -> f.toString().endsWith(".java"))
                    .forEach(f -> expected.add(sources.relativize(f).toString().replace('\\', '/')));
        }
        assertFalse(expected.isEmpty());
        try (JarFile jar = new JarFile(Outer.artifact(module, "sources").toFile())) {
            for (String file : expected) {
                assertNotNull(jar.getEntry(file), module + "-sources.jar lacks " + file);
            }
        }
        assertLicense(Outer.artifact(module, "sources"));
    }

    @ParameterizedTest
    @MethodSource("publishedModules")
    void javadocJar_hasAnIndex_andTheLicense(String module, String moduleName) throws IOException {
        try (JarFile jar = new JarFile(Outer.artifact(module, "javadoc").toFile())) {
            assertNotNull(jar.getEntry("index.html"), module + "-javadoc.jar has no index.html");
        }
        assertLicense(Outer.artifact(module, "javadoc"));
    }

    @Test
    void coreTestJar_carriesTheLicense() throws IOException {
        // Published too, since muon-cuda's and muon-bench's tests depend on it.
        assertLicense(Outer.artifact("muon-core", "tests"));
    }

    private static void assertLicense(Path jarPath) throws IOException {
        byte[] license = Files.readAllBytes(Outer.root().resolve("LICENSE"));
        try (JarFile jar = new JarFile(jarPath.toFile())) {
            var entry = jar.getEntry("META-INF/LICENSE");
            assertNotNull(entry, jarPath.getFileName() + " has no META-INF/LICENSE");
            try (InputStream in = jar.getInputStream(entry)) {
                assertArrayEquals(license, in.readAllBytes(), jarPath.getFileName() + ": META-INF/LICENSE differs");
            }
        }
    }

    private static Element pom(Path file) throws Exception {
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        Document doc = factory.newDocumentBuilder().parse(file.toFile());
        return doc.getDocumentElement();
    }

    /** The direct child of that name; absent is a failure that names it. */
    private static Element child(Element parent, String name) {
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                return e;
            }
        }
        throw new AssertionError("<" + parent.getTagName() + "> has no <" + name + ">");
    }

    private static String text(Element parent, String name) {
        return child(parent, name).getTextContent().trim();
    }

    /** An element's text with whitespace collapsed, to compare two POMs' blocks regardless of indentation. */
    private static String flatten(Element e) {
        return e.getTextContent().trim().replaceAll("\\s+", " ");
    }

    private static String managedVersion(Element bom, String artifactId) {
        NodeList deps = child(child(bom, "dependencyManagement"), "dependencies").getElementsByTagName("dependency");
        for (int i = 0; i < deps.getLength(); i++) {
            Element dep = (Element) deps.item(i);
            if (text(dep, "artifactId").equals(artifactId)) {
                return text(dep, "version");
            }
        }
        throw new AssertionError("muon-bom does not manage " + artifactId);
    }
}
