/*
 * CaffeineBench - the Java half of bench/bench_caffeine.sh: the same stream
 * file and the same passes as bench/bench_cache.c, on a Caffeine cache built
 * as its documentation shows (Caffeine.newBuilder().maximumSize(CAPACITY),
 * every other setting its default).  Keys are Long objects made before
 * timing, held in an array as a server holds parsed keys; a set stores a
 * new 32-byte array, a get returns the cached one.
 *
 *   java -cp caffeine.jar:DIR CaffeineBench FILE THREADS MIX CAPACITY PASSES [caller]
 *
 * prints "RESULT cache=caffeine mix=95 threads=1 mops=6.220 hit=0.7712
 * cpu_ns=301.2": the median pass's operations per second, hit ratio and
 * CPU time per operation (the whole JVM's: its pool, JIT and collector
 * threads included).  By default Caffeine runs its maintenance (draining
 * its buffers, evicting) on ForkJoinPool.commonPool(), another thread;
 * with "caller" the cache is built with executor(Runnable::run), so that
 * the thread whose call finds maintenance due runs it, as admit_lru's
 * does (reported as cache=caffeine-caller).
 */
import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;

import java.io.DataInputStream;
import java.io.BufferedInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.concurrent.CyclicBarrier;

public final class CaffeineBench {
    private static final long SET_FLAG = 1L << 63;

    private static final class Job implements Runnable {
        final Cache<Long, byte[]> cache;
        final Long[] keys;
        final boolean[] isSet;
        final CyclicBarrier start;
        int mix;
        long hits, gets;
        long t0, t1;  /* the thread's first and last instants */

        Job(Cache<Long, byte[]> cache, Long[] keys, boolean[] isSet, CyclicBarrier start) {
            this.cache = cache;
            this.keys = keys;
            this.isSet = isSet;
            this.start = start;
        }

        public void run() {
            try {
                start.await();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
            t0 = System.nanoTime();
            long h = 0, g = 0;
            for (int i = 0; i < keys.length; i++) {
                Long k = keys[i];
                if (mix == 95 && isSet[i]) {
                    cache.put(k, new byte[32]);
                    continue;
                }
                g++;
                if (cache.getIfPresent(k) != null)
                    h++;
                else if (mix == 0)
                    cache.put(k, new byte[32]);
            }
            hits = h;
            gets = g;
            t1 = System.nanoTime();
        }
    }

    private static long le64(DataInputStream in) throws IOException {
        return Long.reverseBytes(in.readLong());
    }

    private static final com.sun.management.OperatingSystemMXBean OS =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    /* Operations per second of one pass of every thread at once; its hit
     * ratio into hit[0], the JVM's CPU nanoseconds per operation into
     * hit[1].  The wall time runs from the first thread's start to the
     * last one's end, as each thread reads the clock: the main thread may
     * run after its workers have started. */
    private static double pass(Job[] jobs, int mix, double[] hit) throws Exception {
        Thread[] th = new Thread[jobs.length];
        long ops = 0, hits = 0, gets = 0;
        for (int i = 0; i < jobs.length; i++) {
            jobs[i].mix = mix;
            th[i] = new Thread(jobs[i]);
            th[i].start();
        }
        long c0 = OS.getProcessCpuTime();
        jobs[0].start.await();
        for (int i = 0; i < jobs.length; i++) {
            th[i].join();
            ops += jobs[i].keys.length;
            hits += jobs[i].hits;
            gets += jobs[i].gets;
        }
        long t0 = jobs[0].t0, t1 = jobs[0].t1;
        for (Job j : jobs) {
            t0 = Math.min(t0, j.t0);
            t1 = Math.max(t1, j.t1);
        }
        double secs = (t1 - t0) * 1e-9;
        hit[0] = gets == 0 ? 0 : (double) hits / gets;
        hit[1] = (double) (OS.getProcessCpuTime() - c0) / ops;
        return ops / secs;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5 && !(args.length == 6 && args[5].equals("caller"))) {
            System.err.println("usage: CaffeineBench FILE THREADS MIX CAPACITY PASSES [caller]");
            System.exit(2);
        }
        boolean caller = args.length == 6;
        int threads = Integer.parseInt(args[1]);
        int mix = Integer.parseInt(args[2]);
        long capacity = Long.parseLong(args[3]);
        int passes = Integer.parseInt(args[4]);
        Long[][] keys = new Long[threads][];
        boolean[][] isSet = new boolean[threads][];

        try (DataInputStream in = new DataInputStream(new BufferedInputStream(
                new FileInputStream(args[0]), 1 << 20))) {
            byte[] magic = new byte[8];
            in.readFully(magic);
            if (!new String(magic, "US-ASCII").equals("ADMITOPS"))
                throw new IOException("not a stream file");
            long nt = le64(in), ops = le64(in);
            if (nt < threads || ops <= 0 || ops > Integer.MAX_VALUE)
                throw new IOException("the stream file has fewer threads than asked for");
            for (int t = 0; t < threads; t++) {
                keys[t] = new Long[(int) ops];
                isSet[t] = new boolean[(int) ops];
                for (int i = 0; i < ops; i++) {
                    long op = le64(in);
                    keys[t][i] = Long.valueOf(op & ~SET_FLAG);
                    isSet[t][i] = (op & SET_FLAG) != 0;
                }
            }
        }

        Caffeine<Object, Object> builder = Caffeine.newBuilder().maximumSize(capacity);
        if (caller)
            builder.executor(Runnable::run);
        Cache<Long, byte[]> cache = builder.build();
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        Job[] jobs = new Job[threads];
        for (int t = 0; t < threads; t++)
            jobs[t] = new Job(cache, keys[t], isSet[t], start);

        double[] h = new double[2];
        double[] rate = new double[passes], hit = new double[passes], cpu = new double[passes];
        pass(jobs, 0, h);      /* fill */
        pass(jobs, mix, h);    /* warm (and compile) */
        for (int p = 0; p < passes; p++) {
            rate[p] = pass(jobs, mix, h);
            hit[p] = h[0];
            cpu[p] = h[1];
        }
        System.out.printf("RESULT cache=%s mix=%d threads=%d mops=%.3f hit=%.4f cpu_ns=%.1f%n",
                caller ? "caffeine-caller" : "caffeine", mix, threads, median(rate) / 1e6,
                median(hit), median(cpu));
    }

    private static double median(double[] v) {
        double[] w = v.clone();
        Arrays.sort(w);
        int n = w.length;
        return n % 2 == 1 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
    }
}
