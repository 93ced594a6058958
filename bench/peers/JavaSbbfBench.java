/*
 * JavaSbbfBench: parquet-java's BlockSplitBloomFilter as a benchmark peer.
 *
 * Built by bench/peers.mk against the jars that ship with pyspark
 * (parquet-column 1.17); nothing of parquet-java is copied here.
 *
 * The workload is the one of bench/peers/arrow_sbbf_bench.cc (see there):
 * a filter loaded to ndv = 8 * size / 10 keys, a pool of min(ndv, 2^20) real keys
 * (half long, half 8..24-byte strings), n probes each present or absent with
 * probability 1/2. parquet-java has no batch entry points, so:
 *   insert            insertHash over n precomputed random hashes, empty filter
 *   probe             findHash over n precomputed hashes
 *   hash_probe_int64  hash(long) then findHash
 *   hash_probe_str    hash(Binary) then findHash; the Binaries are slices of one
 *                     byte[] (as values decoded from a page are); hash(Binary)
 *                     copies the bytes (Binary.getBytes) on every call, as the
 *                     library does.
 * Each op runs three times untimed (JIT warm-up: C2 compiles the loops), then
 * --reps times; the median (and the minimum) is printed as
 *   peer=java op=probe size=1048576 n=4194304 reps=7 ns_per_elem=22.10 ns_min=21.80 hit_rate=0.5049
 *
 * Usage: java -Xms3g -Xmx6g -cp <classes>:<pyspark/jars/*> JavaSbbfBench
 *            [--n N] [--reps R] [--sizes BYTES[,BYTES...]]
 */

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.function.LongSupplier;

import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter;
import org.apache.parquet.io.api.Binary;

public final class JavaSbbfBench {
    private static final long SEED = 0x5BBF2024L;
    private static final long BITS_PER_KEY = 10;
    private static final int POOL_MAX = 1 << 20;
    private static final int MIN_STR = 8;
    private static final int MAX_STR = 24;
    private static final int WARMUP = 3;
    private static final int MAX_BYTES = 128 << 20;

    private JavaSbbfBench() {}

    /** SplitMix64 (Steele, Lea, Flood 2014), as in the C++ peer. */
    private static final class SplitMix64 {
        private long state;

        SplitMix64(long seed) {
            state = seed;
        }

        long next() {
            long z = (state += 0x9E3779B97F4A7C15L);
            z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
            z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
            return z ^ (z >>> 31);
        }

        int below(int bound) {
            return (int) Long.remainderUnsigned(next(), bound);
        }
    }

    /** Random bytes of MIN_STR..MAX_STR length. */
    private static byte[] randomString(SplitMix64 rng) {
        byte[] s = new byte[MIN_STR + rng.below(MAX_STR - MIN_STR + 1)];
        for (int i = 0; i < s.length; i += 8) {
            long word = rng.next();
            for (int j = i; j < Math.min(i + 8, s.length); j++) {
                s[j] = (byte) word;
                word >>>= 8;
            }
        }
        return s;
    }

    /** The loaded filter and the probe inputs for one filter size. */
    private static final class Workload {
        final int size;
        final BlockSplitBloomFilter filter;
        final long[] insertHashes;
        final long[] probeHashes;
        final long[] probeInts;
        final Binary[] probeStrs;

        Workload(int size, int n) {
            this.size = size;
            SplitMix64 rng = new SplitMix64(SEED ^ size);
            filter = new BlockSplitBloomFilter(size);
            if (filter.getBitsetSize() != size) {
                throw new IllegalStateException("parquet-java resized " + size + " to "
                        + filter.getBitsetSize());
            }
            long ndv = (long) size * 8 / BITS_PER_KEY;
            int pool = (int) Math.min(ndv, POOL_MAX);
            int poolInts = (pool + 1) / 2;
            int poolStrs = pool - poolInts;

            long[] ints = new long[poolInts];
            long[] intHashes = new long[poolInts];
            for (int i = 0; i < poolInts; i++) {
                ints[i] = rng.next();
            }
            byte[][] strs = new byte[poolStrs][];
            for (int i = 0; i < poolStrs; i++) {
                strs[i] = randomString(rng);
            }
            for (int i = 0; i < poolInts; i++) {
                intHashes[i] = filter.hash(ints[i]);
                filter.insertHash(intHashes[i]);
            }
            for (byte[] s : strs) {
                filter.insertHash(filter.hash(Binary.fromConstantByteArray(s)));
            }
            for (long done = pool; done < ndv; done++) {
                filter.insertHash(rng.next());
            }

            insertHashes = new long[n];
            for (int i = 0; i < n; i++) {
                insertHashes[i] = rng.next();
            }
            probeHashes = new long[n];
            probeInts = new long[n];
            byte[][] probeBytes = new byte[n][];
            long total = 0;
            for (int i = 0; i < n; i++) {
                if ((rng.next() & 1) != 0) {
                    int j = rng.below(poolInts);
                    probeInts[i] = ints[j];
                    probeHashes[i] = intHashes[j];
                } else {
                    probeInts[i] = rng.next();
                    probeHashes[i] = rng.next();
                }
                probeBytes[i] = poolStrs > 0 && (rng.next() & 1) != 0
                        ? strs[rng.below(poolStrs)]
                        : randomString(rng);
                total += probeBytes[i].length;
            }
            // Back to back in one array, as values decoded from a data page are.
            byte[] data = new byte[Math.toIntExact(total)];
            probeStrs = new Binary[n];
            int pos = 0;
            for (int i = 0; i < n; i++) {
                System.arraycopy(probeBytes[i], 0, data, pos, probeBytes[i].length);
                probeStrs[i] = Binary.fromConstantByteArray(data, pos, probeBytes[i].length);
                pos += probeBytes[i].length;
            }
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        int m = s.length / 2;
        return s.length % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
    }

    /** Prints the median (the figure to compare) and the fastest repetition. */
    private static void report(String op, int size, int n, int reps, double[] nanos,
            double hitRate) {
        StringBuilder line = new StringBuilder(String.format(Locale.ROOT,
                "peer=java op=%s size=%d n=%d reps=%d ns_per_elem=%.2f ns_min=%.2f",
                op, size, n, reps, median(nanos) / n, Arrays.stream(nanos).min().orElse(0) / n));
        if (hitRate >= 0) {
            line.append(String.format(Locale.ROOT, " hit_rate=%.4f", hitRate));
        }
        System.out.println(line);
        System.out.flush();
    }

    /** Runs body WARMUP times untimed and reps times timed; body returns the hit count. */
    private static void measure(String op, Workload w, int n, int reps, boolean probes,
            LongSupplier body) {
        long hits = 0;
        for (int i = 0; i < WARMUP; i++) {
            hits = body.getAsLong();
        }
        double[] times = new double[reps];
        for (int r = 0; r < reps; r++) {
            long t0 = System.nanoTime();
            hits = body.getAsLong();
            times[r] = System.nanoTime() - t0;
        }
        report(op, w.size, n, reps, times, probes ? (double) hits / n : -1.0);
    }

    private static void measureInsert(Workload w, int n, int reps) {
        double[] times = new double[reps];
        for (int r = -WARMUP; r < reps; r++) {
            BlockSplitBloomFilter f = new BlockSplitBloomFilter(w.size);
            long[] hashes = w.insertHashes;
            long t0 = System.nanoTime();
            for (long h : hashes) {
                f.insertHash(h);
            }
            long t = System.nanoTime() - t0;
            if (r >= 0) {
                times[r] = t;
            }
        }
        report("insert", w.size, n, reps, times, -1.0);
    }

    private static void run(Workload w, int n, int reps) {
        final BlockSplitBloomFilter f = w.filter;
        measureInsert(w, n, reps);
        measure("probe", w, n, reps, true, () -> {
            long hits = 0;
            for (long h : w.probeHashes) {
                hits += f.findHash(h) ? 1 : 0;
            }
            return hits;
        });
        measure("hash_probe_int64", w, n, reps, true, () -> {
            long hits = 0;
            for (long v : w.probeInts) {
                hits += f.findHash(f.hash(v)) ? 1 : 0;
            }
            return hits;
        });
        measure("hash_probe_str", w, n, reps, true, () -> {
            long hits = 0;
            for (Binary b : w.probeStrs) {
                hits += f.findHash(f.hash(b)) ? 1 : 0;
            }
            return hits;
        });
    }

    private static void usage() {
        System.err.println("usage: JavaSbbfBench [--n N] [--reps R] [--sizes BYTES[,BYTES...]]");
        System.exit(2);
    }

    private static long parseCount(String text, long max) {
        try {
            long v = Long.parseLong(text);
            if (v > 0 && v <= max) {
                return v;
            }
        } catch (NumberFormatException e) {
            // fall through to usage()
        }
        usage();
        return 0;
    }

    public static void main(String[] args) {
        int n = 4 << 20;
        int reps = 7;
        List<Integer> sizes = new ArrayList<>(List.of(32 << 10, 1 << 20, 128 << 20));
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                usage();
            }
            String value = args[i + 1];
            switch (args[i]) {
                case "--n":
                    n = (int) parseCount(value, 1 << 28);
                    break;
                case "--reps":
                    reps = (int) parseCount(value, 1000);
                    break;
                case "--sizes":
                    sizes.clear();
                    for (String s : value.split(",", -1)) {
                        long size = parseCount(s, MAX_BYTES);
                        if (size < 32 || (size & (size - 1)) != 0) {
                            usage();
                        }
                        sizes.add((int) size);
                    }
                    break;
                default:
                    usage();
            }
        }
        for (int size : sizes) {
            Workload w = new Workload(size, n);
            run(w, n, reps);
        }
    }
}
