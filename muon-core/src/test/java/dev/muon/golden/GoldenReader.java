package dev.muon.golden;

import org.junit.jupiter.params.provider.Arguments;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Reads the golden cases from the class path ({@code /golden/index.txt} lists them), following the format
 * described in {@code shared/golden/README.md}.
 */
public final class GoldenReader {
    private GoldenReader() {
    }

    /** Every case whose name matches. */
    public static List<GoldenCase> cases(Predicate<String> nameFilter) {
        return caseFiles().stream()
                .filter(f -> nameFilter.test(f.replace(".txt", "")))
                .map(GoldenReader::read)
                .collect(Collectors.toList());
    }

    /**
     * The arguments {@code (case, setting)} of every case whose name starts with {@code prefix}, each case with every
     * setting in turn: a golden test's parameter table.
     */
    public static Stream<Arguments> casesWith(String prefix, Object... settings) {
        return cases(n -> n.startsWith(prefix)).stream()
                .flatMap(c -> Stream.of(settings).map(s -> Arguments.of(c, s)));
    }

    /** The case files listed in the index. */
    public static List<String> caseFiles() {
        List<String> files = new ArrayList<>();
        for (String line : lines("index.txt")) {
            String t = line.trim();
            if (!t.isEmpty() && !t.startsWith("#")) {
                files.add(t);
            }
        }
        return files;
    }

    /** Parses one case file. */
    public static GoldenCase read(String file) {
        List<String> lines = lines(file);
        String name = null;
        String format = null;
        String kind = null;
        boolean ended = false;
        Map<String, String> hyper = new java.util.LinkedHashMap<>();
        List<GoldenCase.Param> params = new ArrayList<>();
        List<GoldenCase.Entry> tensors = new ArrayList<>();
        long[] shape = null;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).trim();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            if (line.equals("end")) {
                ended = true;
                break;
            }
            String first = line.split("\\s+")[0];
            if (first.endsWith(":")) {
                String rest = line.substring(first.length()).trim();
                switch (first) {
                    case "format:" -> format = rest;
                    case "case:" -> name = rest;
                    case "kind:" -> kind = rest;
                    case "shape:" -> shape = parseShape(rest);
                    case "param:" -> {
                        Map<String, String> a = attributes(rest);
                        params.add(new GoldenCase.Param(a.get("name"), parseShape(a.get("shape")), a.get("optimizer")));
                    }
                    case "tensor:" -> {
                        Map<String, String> a = attributes(rest);
                        long[] s = parseShape(a.get("shape"));
                        int rows = s.length == 2 ? (int) s[0] : 1;
                        int cols = (int) s[s.length - 1];
                        double[] data = new double[rows * cols];
                        for (int r = 0; r < rows; r++) {
                            String[] nums = lines.get(++i).trim().split(" ");
                            if (nums.length != cols) {
                                throw new IllegalStateException(file + ": row " + r + " has " + nums.length
                                        + " numbers, expected " + cols);
                            }
                            for (int c = 0; c < cols; c++) {
                                data[r * cols + c] = Double.parseDouble(nums[c]);
                            }
                        }
                        tensors.add(new GoldenCase.Entry(a.get("field"), a.get("param"),
                                a.containsKey("step") ? Integer.parseInt(a.get("step")) : 0, s, data));
                    }
                    default -> {
                        // unknown directives are ignored, as the format asks
                    }
                }
            } else {
                int eq = line.indexOf('=');
                hyper.put(line.substring(0, eq), line.substring(eq + 1));
            }
        }
        if (!ended) {
            throw new IllegalStateException(file + " is truncated: no 'end' line");
        }
        if (!"muon-golden/1".equals(format)) {
            throw new IllegalStateException(file + ": unknown format " + format);
        }
        GoldenCase result = new GoldenCase(name, kind);
        result.hyper.putAll(hyper);
        result.params.addAll(params);
        result.tensors.addAll(tensors);
        result.shape = shape;
        return result;
    }

    private static Map<String, String> attributes(String text) {
        Map<String, String> map = new java.util.LinkedHashMap<>();
        for (String token : text.split("\\s+")) {
            int eq = token.indexOf('=');
            if (eq > 0) {
                map.put(token.substring(0, eq), token.substring(eq + 1));
            }
        }
        return map;
    }

    private static long[] parseShape(String text) {
        String[] parts = text.split("x");
        long[] shape = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            shape[i] = Long.parseLong(parts[i]);
        }
        return shape;
    }

    private static List<String> lines(String file) {
        try (InputStream in = GoldenReader.class.getResourceAsStream("/golden/" + file)) {
            if (in == null) {
                throw new IllegalStateException("golden file not on the class path: /golden/" + file);
            }
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                return r.lines().collect(Collectors.toList());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
