// arrow_sbbf_bench: Apache Arrow's parquet::BlockSplitBloomFilter as a benchmark peer.
//
// Links the libparquet / libarrow shipped in the pyarrow wheel (built by
// bench/peers.mk; C++20 is required by Arrow 26's headers). Nothing of Arrow is
// copied here: every insert, probe and hash below is a call into the wheel.
//
// Workload, shared with JavaSbbfBench.java and python_sbbf_bench.py so the
// figures compare like with like:
//   * The filter under test is loaded to its design occupancy: ndv = 8 * size / 10
//     keys (10 bits per key, about 1% FPP by the Parquet sizing formula). A pool of
//     min(ndv, 2^20) real keys (half int64, half 8..24-byte strings) is inserted by
//     hash; the rest of the occupancy is random 64-bit hashes.
//   * Probes are n random draws, each present (a random pool key) or absent (a fresh
//     random key) with probability 1/2, so block accesses are uniformly random.
//   * insert:          InsertHash over n precomputed random hashes into an empty filter.
//   * insert_batch:    InsertHashes over the same hashes (Arrow's batch entry point).
//   * probe:           FindHash over n precomputed hashes.
//   * hash_probe_int64: Hashes(const int64_t*) in chunks of 1024, then FindHash.
//   * hash_probe_str:   Hashes(const ByteArray*) in chunks of 1024, then FindHash;
//                       the probe strings lie back to back, as in an Arrow array.
// Each op runs once untimed, then --reps times; the median (and the minimum) is reported as
//   peer=arrow op=probe size=1048576 n=4194304 reps=7 ns_per_elem=7.21 ns_min=7.02 hit_rate=0.5049
// hit_rate (fraction answered "maybe present") should be 0.5 + FPP/2: a sanity check
// that the probes really are half present.
//
// Usage: arrow_sbbf_bench [--n N] [--reps R] [--sizes BYTES[,BYTES...]]

#include <parquet/bloom_filter.h>
#include <parquet/types.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr uint64_t kSeed = 0x5BBF2024u;
constexpr uint64_t kBitsPerKey = 10;
constexpr size_t kPoolMax = size_t{1} << 20;
constexpr int kChunk = 1024;
constexpr size_t kMinStr = 8;
constexpr size_t kMaxStr = 24;

// SplitMix64 (Steele, Lea, Flood 2014): a fast, seedable, full-period stream.
struct SplitMix64 {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
  }
  size_t Below(size_t bound) { return static_cast<size_t>(Next() % bound); }
};

struct Options {
  size_t n = size_t{4} << 20;
  int reps = 7;
  std::vector<uint32_t> sizes = {32u << 10, 1u << 20, 128u << 20};
};

// Appends a random string of kMinStr..kMaxStr bytes to `data`; returns its length.
size_t AppendRandomString(SplitMix64& rng, std::vector<uint8_t>& data) {
  const size_t len = kMinStr + rng.Below(kMaxStr - kMinStr + 1);
  for (size_t i = 0; i < len; i += 8) {
    const uint64_t word = rng.Next();
    const size_t take = std::min<size_t>(8, len - i);
    const auto* bytes = reinterpret_cast<const uint8_t*>(&word);
    data.insert(data.end(), bytes, bytes + take);
  }
  return len;
}

std::vector<parquet::ByteArray> Slices(const std::vector<uint8_t>& data,
                                       const std::vector<uint32_t>& lengths) {
  std::vector<parquet::ByteArray> out;
  out.reserve(lengths.size());
  const uint8_t* p = data.data();
  for (uint32_t len : lengths) {
    out.emplace_back(len, p);
    p += len;
  }
  return out;
}

// Everything one filter size needs: the loaded filter and the probe inputs.
struct Workload {
  uint32_t size = 0;
  std::unique_ptr<parquet::BlockSplitBloomFilter> filter;
  std::vector<uint64_t> insert_hashes;  // for the insert ops
  std::vector<uint64_t> probe_hashes;
  std::vector<int64_t> probe_ints;
  std::vector<uint8_t> probe_str_data;
  std::vector<parquet::ByteArray> probe_strs;
};

Workload Build(uint32_t size, size_t n) {
  Workload w;
  w.size = size;
  SplitMix64 rng{kSeed ^ size};
  w.filter = std::make_unique<parquet::BlockSplitBloomFilter>();
  w.filter->Init(size);

  const uint64_t ndv = uint64_t{size} * 8 / kBitsPerKey;
  const size_t pool = static_cast<size_t>(std::min<uint64_t>(ndv, kPoolMax));
  const size_t pool_ints = (pool + 1) / 2;
  const size_t pool_strs = pool - pool_ints;

  std::vector<int64_t> ints(pool_ints);
  for (auto& v : ints) v = static_cast<int64_t>(rng.Next());
  std::vector<uint64_t> int_hashes(pool_ints);
  std::vector<uint8_t> str_data;
  std::vector<uint32_t> str_lengths(pool_strs);
  for (auto& len : str_lengths) len = static_cast<uint32_t>(AppendRandomString(rng, str_data));
  const std::vector<parquet::ByteArray> strs = Slices(str_data, str_lengths);
  std::vector<uint64_t> str_hashes(pool_strs);

  std::vector<uint64_t> chunk(kChunk);
  for (size_t i = 0; i < pool_ints; i += kChunk) {
    const int c = static_cast<int>(std::min<size_t>(kChunk, pool_ints - i));
    w.filter->Hashes(ints.data() + i, c, int_hashes.data() + i);
    w.filter->InsertHashes(int_hashes.data() + i, c);
  }
  for (size_t i = 0; i < pool_strs; i += kChunk) {
    const int c = static_cast<int>(std::min<size_t>(kChunk, pool_strs - i));
    w.filter->Hashes(strs.data() + i, c, str_hashes.data() + i);
    w.filter->InsertHashes(str_hashes.data() + i, c);
  }
  for (uint64_t done = pool; done < ndv;) {
    const int c = static_cast<int>(std::min<uint64_t>(kChunk, ndv - done));
    for (int j = 0; j < c; j++) chunk[j] = rng.Next();
    w.filter->InsertHashes(chunk.data(), c);
    done += static_cast<uint64_t>(c);
  }

  w.insert_hashes.resize(n);
  for (auto& h : w.insert_hashes) h = rng.Next();

  w.probe_hashes.resize(n);
  w.probe_ints.resize(n);
  std::vector<uint32_t> probe_lengths(n);
  w.probe_str_data.reserve(n * (kMinStr + kMaxStr) / 2 + kMaxStr);
  for (size_t i = 0; i < n; i++) {
    if (rng.Next() & 1) {
      const size_t j = rng.Below(pool_ints);
      w.probe_ints[i] = ints[j];
      w.probe_hashes[i] = int_hashes[j];
    } else {
      w.probe_ints[i] = static_cast<int64_t>(rng.Next());
      w.probe_hashes[i] = rng.Next();
    }
    if (pool_strs > 0 && (rng.Next() & 1)) {
      const parquet::ByteArray& s = strs[rng.Below(pool_strs)];
      w.probe_str_data.insert(w.probe_str_data.end(), s.ptr, s.ptr + s.len);
      probe_lengths[i] = s.len;
    } else {
      probe_lengths[i] = static_cast<uint32_t>(AppendRandomString(rng, w.probe_str_data));
    }
  }
  w.probe_strs = Slices(w.probe_str_data, probe_lengths);
  return w;
}

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Prints the median (the figure to compare) and the fastest repetition (less
// sensitive to other processes on a shared machine).
void Report(const char* op, uint32_t size, size_t n, int reps, const std::vector<double>& times,
            double hit_rate) {
  const double per = 1e9 / static_cast<double>(n);
  const double fastest = *std::min_element(times.begin(), times.end());
  std::printf("peer=arrow op=%s size=%" PRIu32 " n=%zu reps=%d ns_per_elem=%.2f ns_min=%.2f", op,
              size, n, reps, Median(times) * per, fastest * per);
  if (hit_rate >= 0) std::printf(" hit_rate=%.4f", hit_rate);
  std::printf("\n");
  std::fflush(stdout);
}

// Runs `body` (which returns the number of "maybe present" answers, or 0) once
// untimed and `reps` times timed; reports the median.
template <typename Body>
void Measure(const char* op, const Workload& w, size_t n, int reps, bool probes, Body&& body) {
  size_t hits = body();
  std::vector<double> times;
  for (int r = 0; r < reps; r++) {
    const auto t0 = Clock::now();
    hits = body();
    times.push_back(Seconds(t0, Clock::now()));
  }
  Report(op, w.size, n, reps, times,
         probes ? static_cast<double>(hits) / static_cast<double>(n) : -1.0);
}

// Like Measure, but each repetition starts from an empty filter built outside the timing.
template <typename Body>
void MeasureInsert(const char* op, const Workload& w, size_t n, int reps, Body&& body) {
  std::vector<double> times;
  for (int r = 0; r <= reps; r++) {
    parquet::BlockSplitBloomFilter f;
    f.Init(w.size);
    const auto t0 = Clock::now();
    body(f);
    const double t = Seconds(t0, Clock::now());
    if (r > 0) times.push_back(t);  // the first run is the warm-up
  }
  Report(op, w.size, n, reps, times, -1.0);
}

void Run(const Workload& w, size_t n, int reps) {
  const parquet::BlockSplitBloomFilter& f = *w.filter;

  MeasureInsert("insert", w, n, reps, [&](parquet::BlockSplitBloomFilter& g) {
    for (uint64_t h : w.insert_hashes) g.InsertHash(h);
  });
  MeasureInsert("insert_batch", w, n, reps, [&](parquet::BlockSplitBloomFilter& g) {
    for (size_t i = 0; i < n; i += kChunk) {
      g.InsertHashes(w.insert_hashes.data() + i, static_cast<int>(std::min<size_t>(kChunk, n - i)));
    }
  });
  Measure("probe", w, n, reps, true, [&] {
    size_t hits = 0;
    for (uint64_t h : w.probe_hashes) hits += f.FindHash(h);
    return hits;
  });
  Measure("hash_probe_int64", w, n, reps, true, [&] {
    uint64_t hashes[kChunk];
    size_t hits = 0;
    for (size_t i = 0; i < n; i += kChunk) {
      const int c = static_cast<int>(std::min<size_t>(kChunk, n - i));
      f.Hashes(w.probe_ints.data() + i, c, hashes);
      for (int j = 0; j < c; j++) hits += f.FindHash(hashes[j]);
    }
    return hits;
  });
  Measure("hash_probe_str", w, n, reps, true, [&] {
    uint64_t hashes[kChunk];
    size_t hits = 0;
    for (size_t i = 0; i < n; i += kChunk) {
      const int c = static_cast<int>(std::min<size_t>(kChunk, n - i));
      f.Hashes(w.probe_strs.data() + i, c, hashes);
      for (int j = 0; j < c; j++) hits += f.FindHash(hashes[j]);
    }
    return hits;
  });
}

[[noreturn]] void Usage(const char* prog) {
  std::fprintf(stderr, "usage: %s [--n N] [--reps R] [--sizes BYTES[,BYTES...]]\n", prog);
  std::exit(2);
}

uint64_t ParseCount(const char* prog, const std::string& text, uint64_t max) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v == 0 || v > max) Usage(prog);
  return v;
}

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) Usage(argv[0]);
    const std::string value = argv[++i];
    if (arg == "--n") {
      // Arrow's batch calls take an int count; the harness chunks, but keep n sane.
      o.n = ParseCount(argv[0], value, uint64_t{1} << 30);
    } else if (arg == "--reps") {
      o.reps = static_cast<int>(ParseCount(argv[0], value, 1000));
    } else if (arg == "--sizes") {
      o.sizes.clear();
      size_t start = 0;
      while (start <= value.size()) {
        const size_t comma = std::min(value.find(',', start), value.size());
        const uint64_t s = ParseCount(argv[0], value.substr(start, comma - start),
                                      parquet::BloomFilter::kMaximumBloomFilterBytes);
        if (s < 32 || (s & (s - 1)) != 0) Usage(argv[0]);
        o.sizes.push_back(static_cast<uint32_t>(s));
        start = comma + 1;
      }
    } else {
      Usage(argv[0]);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = Parse(argc, argv);
  for (uint32_t size : o.sizes) {
    const Workload w = Build(size, o.n);
    Run(w, o.n, o.reps);
  }
  return 0;
}
