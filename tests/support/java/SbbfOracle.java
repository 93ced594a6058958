/*
 * SbbfOracle: parquet-java's BlockSplitBloomFilter as a test oracle.
 *
 * Compiled and run by tests/test_parquet_java_oracle.py against the jars that
 * ship with pyspark (parquet-column provides the filter, org.apache.parquet.io.api.Binary
 * and the shaded zero-allocation-hashing XXH64). Nothing here re-implements the
 * filter: every hash, bit and answer below comes from parquet-java.
 *
 * Usage: java -cp <classes>:<pyspark/jars/*> SbbfOracle REQUEST RESPONSE
 *
 * Wire format (all integers little-endian, u32 unsigned):
 *
 *   request  := "SBBFREQ1" u32:job_count job*
 *   job      := u32:physical_type   parquet.thrift Type number (BOOLEAN=0 .. FLBA=7)
 *               u32:type_length     FIXED_LEN_BYTE_ARRAY width, ignored otherwise
 *               u32:num_bytes       passed unchanged to new BlockSplitBloomFilter(num_bytes)
 *               u32:n_insert u32:n_probe
 *               value * (n_insert + n_probe)   inserted values first, then probes
 *   value    := BOOLEAN 1 byte (0/1) | INT32 4 | FLOAT 4 raw IEEE-754 bits | INT64 8
 *               | DOUBLE 8 raw bits | INT96 12 | FLBA type_length | BYTE_ARRAY u32:len bytes
 *
 *   response := "SBBFRSP1" u32:job_count result*
 *   result   := u32:bitset_size      getBitsetSize()
 *               u32:route            0: hashed by the typed overload (checked equal to
 *                                       hash(Object))
 *                                    1: hash(Object) rejects the type; hashed as a Binary of
 *                                       its PLAIN bytes (BOOLEAN in parquet-java 1.17)
 *               u64 * (n_insert + n_probe)     hash of every value, request order
 *               bitset_size bytes              what writeTo() wrote after inserting n_insert values
 *               u8 * (n_insert + n_probe)      findHash(hash) of every value (1 = maybe present)
 *
 * Facts this relies on, read from the 1.17 bytecode: writeTo() writes the raw
 * bitset only (the BloomFilterHeader is written by ParquetFileWriter, not by the
 * filter); hash(Object) accepts Binary, Integer, Long, Float and Double and throws
 * RuntimeException("Parquet Bloom filter: Not supported type") for anything else,
 * so BOOLEAN has no parquet-java hash; INT96 and FIXED_LEN_BYTE_ARRAY are Binary.
 * Exits with status 2 and a message on stderr when the request is malformed or
 * parquet-java's two hash entry points disagree.
 */

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

import org.apache.parquet.column.values.bloomfilter.BlockSplitBloomFilter;
import org.apache.parquet.io.api.Binary;

public final class SbbfOracle {
    private static final byte[] REQUEST_MAGIC = "SBBFREQ1".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] RESPONSE_MAGIC = "SBBFRSP1".getBytes(StandardCharsets.US_ASCII);

    // parquet.thrift Type numbers.
    private static final int BOOLEAN = 0;
    private static final int INT32 = 1;
    private static final int INT64 = 2;
    private static final int INT96 = 3;
    private static final int FLOAT = 4;
    private static final int DOUBLE = 5;
    private static final int BYTE_ARRAY = 6;
    private static final int FIXED_LEN_BYTE_ARRAY = 7;

    private static final int ROUTE_TYPED = 0;
    private static final int ROUTE_BINARY_FALLBACK = 1;

    private SbbfOracle() {}

    /** A request that cannot be served; reported on stderr with exit status 2. */
    private static final class OracleException extends Exception {
        private static final long serialVersionUID = 1L;

        OracleException(String message) {
            super(message);
        }
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            System.err.println("usage: SbbfOracle REQUEST RESPONSE");
            System.exit(2);
        }
        try {
            ByteBuffer in = ByteBuffer.wrap(Files.readAllBytes(Paths.get(args[0])))
                    .order(ByteOrder.LITTLE_ENDIAN);
            try (OutputStream out = Files.newOutputStream(Paths.get(args[1]))) {
                serve(in, out);
            }
        } catch (OracleException e) {
            System.err.println("SbbfOracle: " + e.getMessage());
            System.exit(2);
        }
    }

    private static void serve(ByteBuffer in, OutputStream out) throws IOException, OracleException {
        byte[] magic = new byte[REQUEST_MAGIC.length];
        need(in, magic.length, "magic");
        in.get(magic);
        if (!java.util.Arrays.equals(magic, REQUEST_MAGIC)) {
            throw new OracleException("bad request magic");
        }
        int jobs = u32(in, "job count");
        out.write(RESPONSE_MAGIC);
        out.write(le32(jobs));
        for (int j = 0; j < jobs; j++) {
            try {
                runJob(in, out);
            } catch (OracleException e) {
                throw new OracleException("job " + j + ": " + e.getMessage());
            }
        }
        if (in.hasRemaining()) {
            throw new OracleException(in.remaining() + " trailing bytes in request");
        }
    }

    private static void runJob(ByteBuffer in, OutputStream out)
            throws IOException, OracleException {
        int type = u32(in, "physical type");
        int typeLength = u32(in, "type length");
        int numBytes = u32(in, "num bytes");
        int nInsert = u32(in, "insert count");
        int nProbe = u32(in, "probe count");
        int n = nInsert + nProbe;
        if (n < 0) {
            throw new OracleException("value count overflows");
        }

        BlockSplitBloomFilter filter = new BlockSplitBloomFilter(numBytes);
        long[] hashes = new long[n];
        int route = ROUTE_TYPED;
        for (int i = 0; i < n; i++) {
            switch (type) {
                case BOOLEAN: {
                    need(in, 1, "BOOLEAN value");
                    byte b = in.get();
                    if (b != 0 && b != 1) {
                        throw new OracleException("BOOLEAN value " + b + " is not 0 or 1");
                    }
                    Long viaObject = hashObjectOrNull(filter, Boolean.valueOf(b == 1));
                    long viaBinary = filter.hash(Binary.fromConstantByteArray(new byte[] {b}));
                    if (viaObject == null) {
                        route = ROUTE_BINARY_FALLBACK;
                        hashes[i] = viaBinary;
                    } else {
                        hashes[i] = viaObject;
                    }
                    break;
                }
                case INT32: {
                    need(in, 4, "INT32 value");
                    int v = in.getInt();
                    hashes[i] = agree(filter.hash(v), filter.hash((Object) Integer.valueOf(v)),
                            "INT32");
                    break;
                }
                case INT64: {
                    need(in, 8, "INT64 value");
                    long v = in.getLong();
                    hashes[i] = agree(filter.hash(v), filter.hash((Object) Long.valueOf(v)),
                            "INT64");
                    break;
                }
                case FLOAT: {
                    need(in, 4, "FLOAT value");
                    float v = Float.intBitsToFloat(in.getInt());
                    hashes[i] = agree(filter.hash(v), filter.hash((Object) Float.valueOf(v)),
                            "FLOAT");
                    break;
                }
                case DOUBLE: {
                    need(in, 8, "DOUBLE value");
                    double v = Double.longBitsToDouble(in.getLong());
                    hashes[i] = agree(filter.hash(v), filter.hash((Object) Double.valueOf(v)),
                            "DOUBLE");
                    break;
                }
                case INT96:
                    hashes[i] = hashBinary(filter, bytes(in, 12, "INT96 value"));
                    break;
                case FIXED_LEN_BYTE_ARRAY:
                    if (typeLength <= 0) {
                        throw new OracleException(
                                "FIXED_LEN_BYTE_ARRAY needs a positive type length");
                    }
                    hashes[i] = hashBinary(filter, bytes(in, typeLength, "FLBA value"));
                    break;
                case BYTE_ARRAY: {
                    int len = u32(in, "BYTE_ARRAY length");
                    hashes[i] = hashBinary(filter, bytes(in, len, "BYTE_ARRAY value"));
                    break;
                }
                default:
                    throw new OracleException("unknown physical type " + type);
            }
        }

        for (int i = 0; i < nInsert; i++) {
            filter.insertHash(hashes[i]);
        }
        ByteArrayOutputStream written = new ByteArrayOutputStream(filter.getBitsetSize());
        filter.writeTo(written);
        if (written.size() != filter.getBitsetSize()) {
            throw new OracleException("writeTo wrote " + written.size()
                    + " bytes, getBitsetSize() is " + filter.getBitsetSize());
        }

        out.write(le32(filter.getBitsetSize()));
        out.write(le32(route));
        ByteBuffer hashBytes = ByteBuffer.allocate(8 * n).order(ByteOrder.LITTLE_ENDIAN);
        for (long h : hashes) {
            hashBytes.putLong(h);
        }
        out.write(hashBytes.array());
        written.writeTo(out);
        byte[] found = new byte[n];
        for (int i = 0; i < n; i++) {
            found[i] = (byte) (filter.findHash(hashes[i]) ? 1 : 0);
        }
        out.write(found);
    }

    /** parquet-java's hash(Object), or null when it rejects the value's type. */
    private static Long hashObjectOrNull(BlockSplitBloomFilter filter, Object value) {
        try {
            return filter.hash(value);
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static long hashBinary(BlockSplitBloomFilter filter, byte[] value)
            throws OracleException {
        Binary b = Binary.fromConstantByteArray(value);
        return agree(filter.hash(b), filter.hash((Object) b), "Binary");
    }

    private static long agree(long typed, long viaObject, String what) throws OracleException {
        if (typed != viaObject) {
            throw new OracleException("hash(" + what + ") and hash(Object) disagree: "
                    + Long.toUnsignedString(typed) + " vs " + Long.toUnsignedString(viaObject));
        }
        return typed;
    }

    private static byte[] bytes(ByteBuffer in, int len, String what) throws OracleException {
        need(in, len, what);
        byte[] b = new byte[len];
        in.get(b);
        return b;
    }

    private static int u32(ByteBuffer in, String what) throws OracleException {
        need(in, 4, what);
        int v = in.getInt();
        if (v < 0) {
            throw new OracleException(what + " " + Integer.toUnsignedString(v) + " is too large");
        }
        return v;
    }

    private static void need(ByteBuffer in, int len, String what) throws OracleException {
        if (len < 0 || in.remaining() < len) {
            throw new OracleException("request truncated in " + what);
        }
    }

    private static byte[] le32(int v) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array();
    }
}
