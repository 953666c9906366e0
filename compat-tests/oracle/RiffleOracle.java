/*
 * Riffle conformance oracle: runs prepared cases on real Apache Flink inside one JVM.
 *
 * Usage: java -cp "<pyflink/lib>/*:<classes>" RiffleOracle <jobs-dir>
 *
 * <jobs-dir> holds one sub-directory per case (processed in name order), prepared by the
 * `regenerate` script:
 *   config       lines "key<TAB>value", applied to a fresh streaming TableEnvironment
 *   timeout      seconds allowed for the whole case
 *   stmt-NNNN    one SQL statement per file, executed in name order
 * For each case the oracle writes result.txt, one record per line, fields separated by TAB and
 * escaped (backslash, newline, carriage return, tab):
 *   column<TAB>name<TAB>type        result columns (the query's, or the single sink table's)
 *   primary-key<TAB>name ...        the sink table's primary key columns, when declared
 *   row<TAB>text                    Row.toString() of a collected row, or one line a print sink wrote
 *   error<TAB>class<TAB>message     root cause of a failure (the case stops there)
 *   timeout<TAB>seconds             the case did not finish in time (harness failure, not a result)
 *   elapsed<TAB>millis
 * It also writes <jobs-dir>/version with the Flink version it runs.
 * Progress goes to stderr; System.out is reserved for print sinks, which it captures per case.
 */

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.internal.TableEnvironmentInternal;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.operations.ModifyOperation;
import org.apache.flink.table.operations.Operation;
import org.apache.flink.table.operations.QueryOperation;
import org.apache.flink.table.operations.SinkModifyOperation;
import org.apache.flink.table.operations.StatementSetOperation;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

public final class RiffleOracle {

    /** Raised when a case exceeds its time budget. */
    private static final class CaseTimeout extends Exception {
        CaseTimeout(String what) {
            super(what);
        }
    }

    private static final PrintStream REAL_OUT = System.out;
    private static final ExecutorService COLLECTOR = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "riffle-oracle-collect");
        t.setDaemon(true);
        return t;
    });

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: RiffleOracle <jobs-dir>");
            System.exit(2);
        }
        List<Path> cases;
        try (Stream<Path> s = Files.list(Paths.get(args[0]))) {
            cases = s.filter(Files::isDirectory).sorted().collect(Collectors.toList());
        }
        Files.writeString(Paths.get(args[0]).resolve("version"),
                org.apache.flink.runtime.util.EnvironmentInformation.getVersion() + "\n");
        long jvmStart = java.lang.management.ManagementFactory.getRuntimeMXBean().getStartTime();
        System.err.printf("oracle: JVM up after %d ms, %d case(s)%n",
                System.currentTimeMillis() - jvmStart, cases.size());
        int i = 0;
        for (Path dir : cases) {
            i++;
            String name = Files.readString(dir.resolve("name")).trim();
            long start = System.nanoTime();
            List<String> out = new ArrayList<>();
            String status = runCase(dir, out);
            long ms = (System.nanoTime() - start) / 1_000_000;
            out.add(record("elapsed", Long.toString(ms)));
            Files.write(dir.resolve("result.txt"), out, StandardCharsets.UTF_8);
            System.err.printf("oracle: [%d/%d] %-50s %-7s %6d ms%n", i, cases.size(), name, status, ms);
        }
        COLLECTOR.shutdownNow();
        System.exit(0);
    }

    private static String runCase(Path dir, List<String> out) throws IOException {
        long timeoutMs = Long.parseLong(Files.readString(dir.resolve("timeout")).trim()) * 1000;
        long deadline = System.currentTimeMillis() + timeoutMs;
        Configuration conf = new Configuration();
        for (String line : Files.readAllLines(dir.resolve("config"), StandardCharsets.UTF_8)) {
            if (line.isEmpty()) {
                continue;
            }
            int tab = line.indexOf('\t');
            conf.setString(line.substring(0, tab), line.substring(tab + 1));
        }
        List<Path> stmts;
        try (Stream<Path> s = Files.list(dir)) {
            stmts = s.filter(p -> p.getFileName().toString().startsWith("stmt-")).sorted()
                    .collect(Collectors.toList());
        }
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        PrintStream capture = new PrintStream(captured, true, StandardCharsets.UTF_8);
        System.setOut(capture);
        try {
            TableEnvironment tEnv = TableEnvironment.create(
                    EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
            TableEnvironmentInternal internal = (TableEnvironmentInternal) tEnv;
            for (Path stmtFile : stmts) {
                String sql = Files.readString(stmtFile, StandardCharsets.UTF_8);
                List<Operation> ops = internal.getParser().parse(sql);
                if (ops.size() != 1) {
                    throw new IllegalStateException("expected exactly one operation per statement, got " + ops.size());
                }
                Operation op = ops.get(0);
                if (op instanceof QueryOperation) {
                    TableResult result = internal.executeInternal(op);
                    describeColumns(result.getResolvedSchema(), out);
                    collect(result, deadline, out);
                } else if (op instanceof ModifyOperation || op instanceof StatementSetOperation) {
                    describeSink(op, out);
                    TableResult result = internal.executeInternal(op);
                    awaitJob(result, deadline);
                    drainCaptured(captured, out);
                } else {
                    TableResult result = internal.executeInternal(op);
                    // DDL prints nothing; SHOW / DESCRIBE style statements return rows.
                    if (!result.getJobClient().isPresent()
                            && result.getResultKind() == org.apache.flink.table.api.ResultKind.SUCCESS_WITH_CONTENT) {
                        describeColumns(result.getResolvedSchema(), out);
                        collect(result, deadline, out);
                    }
                }
            }
            drainCaptured(captured, out);
            return "ok";
        } catch (CaseTimeout t) {
            out.add(record("timeout", Long.toString(timeoutMs / 1000)));
            return "TIMEOUT";
        } catch (Throwable t) {
            drainCaptured(captured, out);
            Throwable root = t;
            while (root.getCause() != null && root.getCause() != root) {
                root = root.getCause();
            }
            String msg = root.getMessage() == null ? "" : root.getMessage();
            out.add(record("error", root.getClass().getName(), msg));
            return "error";
        } finally {
            System.setOut(REAL_OUT);
        }
    }

    private static void describeColumns(ResolvedSchema schema, List<String> out) {
        for (Column c : schema.getColumns()) {
            out.add(record("column", c.getName(), c.getDataType().getLogicalType().asSummaryString()));
        }
        Optional<UniqueConstraint> pk = schema.getPrimaryKey();
        pk.ifPresent(k -> out.add(record("primary-key", k.getColumns().toArray(new String[0]))));
    }

    /** Records the sink table's schema when all inserts of the statement go to one table. */
    private static void describeSink(Operation op, List<String> out) {
        List<ModifyOperation> mods = new ArrayList<>();
        if (op instanceof StatementSetOperation) {
            mods.addAll(((StatementSetOperation) op).getOperations());
        } else {
            mods.add((ModifyOperation) op);
        }
        Set<String> tables = new LinkedHashSet<>();
        ResolvedSchema schema = null;
        for (ModifyOperation m : mods) {
            if (!(m instanceof SinkModifyOperation)) {
                return;
            }
            SinkModifyOperation sink = (SinkModifyOperation) m;
            tables.add(sink.getContextResolvedTable().getIdentifier().asSummaryString());
            schema = sink.getContextResolvedTable().getResolvedSchema();
        }
        if (tables.size() == 1 && schema != null && !out.stream().anyMatch(l -> l.startsWith("column\t"))) {
            describeColumns(schema, out);
        }
    }

    private static void awaitJob(TableResult result, long deadline) throws Exception {
        long left = deadline - System.currentTimeMillis();
        try {
            result.await(Math.max(left, 1), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            result.getJobClient().ifPresent(JobClient::cancel);
            throw new CaseTimeout("job");
        }
    }

    private static void collect(TableResult result, long deadline, List<String> out) throws Exception {
        CloseableIterator<Row> it = result.collect();
        Future<List<String>> rows = COLLECTOR.submit(() -> {
            List<String> got = new ArrayList<>();
            while (it.hasNext()) {
                got.add(it.next().toString());
            }
            return got;
        });
        try {
            List<String> got = rows.get(Math.max(deadline - System.currentTimeMillis(), 1), TimeUnit.MILLISECONDS);
            for (String r : got) {
                out.add(record("row", r));
            }
        } catch (TimeoutException e) {
            result.getJobClient().ifPresent(JobClient::cancel);
            rows.cancel(true);
            throw new CaseTimeout("collect");
        } catch (java.util.concurrent.ExecutionException e) {
            throw (e.getCause() instanceof Exception) ? (Exception) e.getCause() : e;
        } finally {
            try {
                it.close();
            } catch (Exception ignored) {
                // The job already finished or failed; closing only releases the client side.
            }
        }
    }

    /** Moves what print sinks wrote so far into the result, one row record per line. */
    private static void drainCaptured(ByteArrayOutputStream captured, List<String> out) {
        String text = captured.toString(StandardCharsets.UTF_8);
        captured.reset();
        if (text.isEmpty()) {
            return;
        }
        for (String line : text.split("\n", -1)) {
            if (!line.isEmpty()) {
                out.add(record("row", line));
            }
        }
    }

    private static String record(String kind, String... fields) {
        StringBuilder sb = new StringBuilder(kind);
        for (String f : fields) {
            sb.append('\t').append(escape(f));
        }
        return sb.toString();
    }

    private static String escape(String s) {
        StringBuilder sb = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default: sb.append(c);
            }
        }
        return sb.toString();
    }
}
