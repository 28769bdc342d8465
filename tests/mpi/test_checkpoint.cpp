// io::checkpoint and io::restore: state written by the first w ranks on one process grid and
// restored by every rank count of the launch on every grid, bit for bit, against the global data
// on the host; a dataset with one flipped byte is refused with its name; a checkpoint never
// replaces a file that is not one (the file stays byte for byte); a failed restore's errors name
// the entry.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <array>
#include <complex>
#include <functional>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "algo_test_util.hpp"
#include "tessera/framework/checkpoint.hpp"
#include "tessera/framework/field.hpp"

namespace tessera {
namespace {

// A directory every rank sees (rank 0 makes it), removed with its files at the end of the test.
class SharedDir {
 public:
  explicit SharedDir(const Context& ctx) : ctx_(ctx) {
    std::string name(256, '\0');
    if (ctx.is_root()) {
      char templ[] = "/tmp/tessera_checkpoint_XXXXXX";
      if (!mkdtemp(templ)) std::abort();
      name = templ;
    }
    name.resize(256);
    ctx.comm().bcast(name.data(), 256, 0);
    path_ = name.c_str();
  }
  ~SharedDir() {
    ctx_.comm().barrier();
    if (ctx_.is_root()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  Context ctx_;
  std::string path_;
};

std::vector<ProcessGrid> every_grid(const Context& ctx) {
  std::vector<ProcessGrid> grids;
  for (int r = 1; r <= ctx.size(); ++r)
    if (ctx.size() % r == 0) grids.push_back(ProcessGrid::create(ctx, r, ctx.size() / r));
  return grids;
}

std::string grid_text(const ProcessGrid& g) { return std::to_string(g.rows()) + "x" + std::to_string(g.cols()); }

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// The state a test writes and restores.
struct State {
  index_t field_rows = 13, field_cols = 17, matrix_rows = 5, matrix_cols = 7;
  std::vector<double> field;
  std::vector<std::complex<float>> matrix;
  std::vector<std::int64_t> counts;
  std::vector<float> one;
  double time = 0;
  std::int64_t steps = 0;

  explicit State(std::uint64_t seed) {
    field = test::random_vector<double>(field_rows * field_cols, seed);
    const std::vector<float> re = test::random_vector<float>(matrix_rows * matrix_cols, seed + 1);
    const std::vector<float> im = test::random_vector<float>(matrix_rows * matrix_cols, seed + 2);
    for (std::size_t i = 0; i < re.size(); ++i) matrix.emplace_back(re[i], im[i]);
    counts = test::random_vector<std::int64_t>(33, seed + 3);
    one = test::random_vector<float>(1, seed + 4);
    time = field[3] * 1e-3;
    steps = counts[5];
  }
};

// A field of the global `values` (ghosts filled with `ghost`).
Field2D<double> make_field(const ProcessGrid& grid, const State& s, double ghost) {
  Field2D<double> f(grid, s.field_rows, s.field_cols, 1);
  f.fill(ghost);
  f.storage().from_replicated(s.field.data());
  return f;
}

TEST(Checkpoint, RestoresOnEveryRankCountAndGrid) {
  const Context& world = test::world();
  SharedDir dir(world);
  const State want(test::seed());
  for (int writers = 1; writers <= world.size(); ++writers) {
    const std::string file = dir.file("ck_" + std::to_string(writers) + ".h5");
    // Written by the first `writers` ranks, on their last grid (P x 1 ... 1 x P alternate).
    if (const Context sub = world.first(writers); world.rank() < writers) {
      const std::vector<ProcessGrid> grids = every_grid(sub);
      const ProcessGrid& grid = grids[static_cast<std::size_t>(writers) % grids.size()];
      Field2D<double> field = make_field(grid, want, 0.0);
      auto matrix = DistMatrix<std::complex<float>>::from_replicated(grid, want.matrix_rows, want.matrix_cols, want.matrix);
      auto counts = DistArray<std::int64_t>::from_replicated(sub, want.counts);
      auto one = DistArray<float>::from_replicated(sub, want.one);
      DistArray<double> none(sub, 0);
      double time = want.time;
      std::int64_t steps = want.steps;
      io::checkpoint(sub, file,
                     {{"field", field}, {"matrix", matrix}, {"counts", counts}, {"one", one}, {"none", none},
                      {"time", time}, {"steps", steps}},
                     1234 + writers, {"test", {{"note", "written on " + grid_text(grid)}}});
    }
    world.comm().barrier();
    for (const ProcessGrid& grid : every_grid(world)) {
      const std::string where = "written by " + std::to_string(writers) + " rank(s), restored by " +
                                std::to_string(world.size()) + " on grid " + grid_text(grid) + " seed=" +
                                std::to_string(test::seed());
      Field2D<double> field(grid, want.field_rows, want.field_cols, 1);
      field.fill(-7.0);  // the ghosts: restore leaves them
      DistMatrix<std::complex<float>> matrix(grid, 1, 1);
      DistArray<std::int64_t> counts(world, 2);
      DistArray<float> one(world, 5);
      DistArray<double> none(world, 3);
      double time = 0;
      std::int64_t steps = 0;
      const index_t step = io::restore(
          world, file,
          {{"field", field}, {"matrix", matrix}, {"counts", counts}, {"one", one}, {"none", none}, {"time", time}, {"steps", steps}});
      EXPECT_EQ(step, 1234 + writers) << where;
      EXPECT_EQ(io::checkpoint_step(world, file), 1234 + writers) << where;
      std::vector<double> all_field(static_cast<std::size_t>(want.field_rows * want.field_cols));
      field.storage().gather(all_field.data(), 0);
      if (world.is_root()) {
        EXPECT_TRUE(same_bytes(all_field, want.field)) << "field " << where;
      }
      double ghost = 0;
      kernels::copy_to_host(world.queue(), &ghost, field.origin() - field.ld() - 1, sizeof ghost);
      EXPECT_EQ(ghost, -7.0) << "a ghost cell changed " << where;
      EXPECT_EQ(matrix.rows(), want.matrix_rows);
      EXPECT_EQ(matrix.cols(), want.matrix_cols);
      const auto all_matrix = matrix.gather(0);
      if (world.is_root()) {
        EXPECT_TRUE(same_bytes(all_matrix, want.matrix)) << "matrix " << where;
      }
      const auto all_counts = counts.gather(0);
      if (world.is_root()) {
        EXPECT_TRUE(same_bytes(all_counts, want.counts)) << "counts " << where;
      }
      const auto all_one = one.gather(0);
      if (world.is_root()) {
        EXPECT_TRUE(same_bytes(all_one, want.one)) << "one " << where;
      }
      EXPECT_EQ(none.global_size(), 0) << where;
      EXPECT_EQ(std::memcmp(&time, &want.time, sizeof time), 0) << "time " << where;
      EXPECT_EQ(steps, want.steps) << where;
    }
  }
}

// Flips one byte of the raw data of `dataset` (contiguous, as the checkpoint writes it). Rank 0.
void flip_byte(const std::string& file, const std::string& dataset, std::size_t byte) {
  haddr_t offset = HADDR_UNDEF;
  {
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
    offset = H5Dget_offset(d);
    H5Dclose(d);
    H5Fclose(f);
  }
  ASSERT_NE(offset, HADDR_UNDEF);
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(static_cast<std::streamoff>(offset + byte));
  char c = 0;
  io.read(&c, 1);
  c = static_cast<char>(c ^ 0x10);
  io.seekp(static_cast<std::streamoff>(offset + byte));
  io.write(&c, 1);
}

TEST(Checkpoint, AFlippedByteIsFoundAndNamed) {
  const Context& world = test::world();
  SharedDir dir(world);
  const State want(test::seed() + 7);
  const ProcessGrid grid = ProcessGrid::create(world);
  for (const char* victim : {"/field", "/counts", "/time"}) {
    const std::string file = dir.file("flipped.h5");
    Field2D<double> field = make_field(grid, want, 0.0);
    auto counts = DistArray<std::int64_t>::from_replicated(world, want.counts);
    double time = want.time;
    io::checkpoint(world, file, {{"field", field}, {"counts", counts}, {"time", time}}, 9);
    if (world.is_root()) flip_byte(file, victim, std::string(victim) == "/time" ? 7 : 21);
    world.comm().barrier();
    try {
      io::restore(world, file, {{"field", field}, {"counts", counts}, {"time", time}});
      ADD_FAILURE() << "a flipped byte in " << victim << " was not found";
    } catch (const io::IoError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(std::string("'") + victim + "'"), std::string::npos) << what;
      EXPECT_NE(what.find("checksum"), std::string::npos) << what;
      EXPECT_EQ(e.dataset(), victim);
    }
  }
}

std::string file_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Checkpoint, NeverReplacesAnotherFile) {
  const Context& world = test::world();
  SharedDir dir(world);
  const State want(test::seed() + 11);
  auto counts = DistArray<std::int64_t>::from_replicated(world, want.counts);
  double time = want.time;
  // An output of the same name and app, not a checkpoint; a file that is not HDF5; a checkpoint of
  // another app.
  const std::string output = dir.file("output.h5"), text = dir.file("notes.txt"), other = dir.file("other.h5");
  io::OutputAttributes attrs;
  attrs.app = "test";
  io::write_array(counts, {output, "/counts"}, attrs);
  if (world.is_root()) std::ofstream(text) << "precious\n";
  io::checkpoint(world, other, {{"counts", counts}}, 1, {"another app", {}});
  world.comm().barrier();
  for (const std::string& file : {output, text, other}) {
    const std::string before = world.is_root() ? file_bytes(file) : "";
    try {
      io::checkpoint(world, file, {{"counts", counts}, {"time", time}}, 2, {"test", {}});
      ADD_FAILURE() << "a checkpoint replaced " << file;
    } catch (const io::IoError& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    }
    if (world.is_root()) {
      EXPECT_EQ(file_bytes(file), before) << file << " changed";
    }
  }
  // A checkpoint of the same entries by the same app is replaced.
  io::checkpoint(world, other, {{"counts", counts}}, 3, {"another app", {}});
  EXPECT_EQ(io::checkpoint_step(world, other), 3);
  // Not a checkpoint: restore and checkpoint_step say so.
  EXPECT_THROW(io::restore(world, output, {{"counts", counts}}), io::IoError);
  EXPECT_THROW(io::checkpoint_step(world, output), io::IoError);
  EXPECT_THROW(io::checkpoint_step(world, text), io::IoError);
  EXPECT_THROW(io::checkpoint_step(world, dir.file("missing.h5")), io::IoError);
}

TEST(Checkpoint, RestoreErrorsNameTheEntry) {
  const Context& world = test::world();
  SharedDir dir(world);
  const State want(test::seed() + 13);
  const std::string file = dir.file("ck.h5");
  auto counts = DistArray<std::int64_t>::from_replicated(world, want.counts);
  double time = want.time;
  io::checkpoint(world, file, {{"counts", counts}, {"time", time}}, 5);
  auto expect_error = [&](const std::vector<io::CheckpointEntry>& entries, const std::string& words) {
    try {
      io::restore(world, file, entries);
      ADD_FAILURE() << "restore accepted entries that do not match (" << words << ")";
    } catch (const io::IoError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  DistArray<std::int32_t> narrow(world, 1);
  float single = 0;
  std::int64_t count = 0;
  expect_error({{"counts", narrow}}, "int64");            // another element type
  expect_error({{"time", single}}, "float64");           // another scalar type
  expect_error({{"missing", count}}, "'/missing'");       // no such entry
  const ProcessGrid grid = ProcessGrid::create(world);
  DistMatrix<std::int64_t> as_matrix(grid, 1, 1);
  expect_error({{"counts", as_matrix}}, "array");          // another kind
  EXPECT_THROW(io::checkpoint(world, file, {{"a/b", time}}, 1), io::IoError);
  EXPECT_THROW(io::checkpoint(world, file, {{"t", time}, {"t", time}}, 1), io::IoError);
  EXPECT_EQ(io::restore(world, file, {{"counts", counts}, {"time", time}}), 5);
}

std::vector<CartesianGrid> every_3d_grid(const Context& ctx) {
  std::vector<CartesianGrid> grids;
  const int p = ctx.size();
  for (int a = 1; a <= p; ++a)
    for (int b = 1; a * b <= p; ++b)
      if (p % (a * b) == 0) grids.push_back(CartesianGrid::create(ctx, {a, b, p / (a * b)}));
  return grids;
}

// The whole dataset as HDF5 reads it (rank 0), with its shape: the reader the field's writer is
// checked against.
template <class T>
std::vector<T> read_whole(const std::string& file, const std::string& dataset, hid_t memory_type,
                          std::vector<hsize_t>* shape) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
  const hid_t space = H5Dget_space(d);
  shape->assign(static_cast<std::size_t>(H5Sget_simple_extent_ndims(space)), 0);
  H5Sget_simple_extent_dims(space, shape->data(), nullptr);
  std::size_t n = 1;
  for (hsize_t e : *shape) n *= static_cast<std::size_t>(e);
  std::vector<T> all(n);
  EXPECT_GE(H5Dread(d, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data()), 0);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
  return all;
}

// Field<T, D>: io::write_field in global order (checked with HDF5's own read of the whole dataset),
// io::read_field and a checkpoint of 3-D and 2-D fields written by the first w ranks on one 3-D grid
// and restored by every rank count of the launch on every 3-D grid, bit for bit; fields with fewer
// cells than ranks along an axis; a dataset of another shape refused.
TEST(Checkpoint, FieldsOfDAxesOnEveryGrid) {
  const Context& world = test::world();
  SharedDir dir(world);
  const std::uint64_t seed = test::seed() + 17;
  const std::array<index_t, 3> n{7, 5, 6};
  const std::array<index_t, 3> thin{2, 1, 3};
  const std::vector<double> u_want = test::random_vector<double>(n[0] * n[1] * n[2], seed);
  const std::vector<float> re = test::random_vector<float>(n[0] * n[1] * n[2], seed + 1);
  const std::vector<float> im = test::random_vector<float>(n[0] * n[1] * n[2], seed + 2);
  std::vector<std::complex<float>> c_want;
  for (std::size_t i = 0; i < re.size(); ++i) c_want.emplace_back(re[i], im[i]);
  const std::vector<float> p_want = test::random_vector<float>(n[1] * n[2], seed + 3);
  const std::vector<std::int32_t> t_want = test::random_vector<std::int32_t>(thin[0] * thin[1] * thin[2], seed + 4);
  for (int writers = 1; writers <= world.size(); ++writers) {
    const std::string file = dir.file("fields_" + std::to_string(writers) + ".h5");
    const std::string output = dir.file("u_" + std::to_string(writers) + ".h5");
    if (const Context sub = world.first(writers); world.rank() < writers) {
      const std::vector<CartesianGrid> grids = every_3d_grid(sub);
      const CartesianGrid& grid = grids[static_cast<std::size_t>(writers) % grids.size()];
      Field<double, 3> u(grid, n, {1, 2, 1}, {AxisBoundary::dirichlet, AxisBoundary::periodic, AxisBoundary::dirichlet});
      u.fill(3.0);
      u.from_replicated(u_want);
      Field<std::complex<float>, 3> c(grid, n, {0, 0, 0});
      c.from_replicated(c_want);
      Field<std::int32_t, 3> t(grid, thin, {1, 1, 1});
      t.from_replicated(t_want);
      Field<float, 2> p(CartesianGrid::create(sub, {0, 0}), {n[1], n[2]}, {1, 1});
      p.from_replicated(p_want);
      io::OutputAttributes attrs;
      attrs.app = "test";
      io::write_field(u, {output, "/g/u"}, attrs);
      io::OutputFile(sub, output).add(c, "/c", attrs).add(p, "/p", attrs).commit();
      io::checkpoint(sub, file, {{"u", u}, {"c", c}, {"t", t}, {"p", p}}, 40 + writers, {"test", {}});
    }
    world.comm().barrier();
    if (world.is_root()) {
      std::vector<hsize_t> shape;
      const std::vector<double> u_file = read_whole<double>(output, "/g/u", H5T_NATIVE_DOUBLE, &shape);
      EXPECT_EQ(shape, (std::vector<hsize_t>{7, 5, 6}));
      EXPECT_TRUE(same_bytes(u_file, u_want)) << "write_field by " << writers << " rank(s)";
      const std::vector<float> p_file = read_whole<float>(output, "/p", H5T_NATIVE_FLOAT, &shape);
      EXPECT_EQ(shape, (std::vector<hsize_t>{5, 6}));
      EXPECT_TRUE(same_bytes(p_file, p_want)) << "2-D write_field by " << writers << " rank(s)";
      const hid_t complex_type = H5Tcreate(H5T_COMPOUND, sizeof(std::complex<float>));
      H5Tinsert(complex_type, "r", 0, H5T_NATIVE_FLOAT);
      H5Tinsert(complex_type, "i", sizeof(float), H5T_NATIVE_FLOAT);
      const auto c_file = read_whole<std::complex<float>>(output, "/c", complex_type, &shape);
      H5Tclose(complex_type);
      EXPECT_EQ(shape, (std::vector<hsize_t>{7, 5, 6}));
      EXPECT_TRUE(same_bytes(c_file, c_want)) << "complex write_field by " << writers << " rank(s)";
    }
    for (const CartesianGrid& grid : every_3d_grid(world)) {
      const std::string where = "written by " + std::to_string(writers) + " rank(s), restored by " +
                                std::to_string(world.size()) + " on grid " + grid.text() + " seed=" +
                                std::to_string(seed);
      Field<double, 3> u(grid, n, {1, 1, 1});
      u.fill(-7.0);  // the ghosts: restore leaves them
      Field<std::complex<float>, 3> c(grid, n, {1, 0, 1});
      Field<std::int32_t, 3> t(grid, thin, {0, 0, 0});
      Field<float, 2> p(CartesianGrid::create(world, {0, 0}), {n[1], n[2]}, {0, 0});
      EXPECT_EQ(io::restore(world, file, {{"u", u}, {"c", c}, {"t", t}, {"p", p}}), 40 + writers) << where;
      const auto u_all = u.gather(0);
      const auto c_all = c.gather(0);
      const auto t_all = t.gather(0);
      const auto p_all = p.gather(0);
      if (world.is_root()) {
        EXPECT_TRUE(same_bytes(u_all, u_want)) << "u " << where;
        EXPECT_TRUE(same_bytes(c_all, c_want)) << "c " << where;
        EXPECT_TRUE(same_bytes(t_all, t_want)) << "t " << where;
        EXPECT_TRUE(same_bytes(p_all, p_want)) << "p " << where;
      }
      if (u.local_cells() > 0) {
        double ghost = 0;
        kernels::copy_to_host(world.queue(), &ghost, u.origin() - u.stride(0) - u.stride(1) - 1, sizeof ghost);
        EXPECT_EQ(ghost, -7.0) << "a ghost cell changed " << where;
      }
      // read_field: the written dataset into this grid's field, converted to float.
      Field<float, 3> v(grid, n, {0, 0, 0});
      io::read_field(v, {output, "/g/u"});
      const auto v_all = v.gather(0);
      if (world.is_root()) {
        for (std::size_t i = 0; i < v_all.size(); ++i) ASSERT_EQ(v_all[i], static_cast<float>(u_want[i])) << i << " " << where;
      }
    }
  }
  // Another shape or rank: refused, naming the dataset.
  const std::string output = dir.file("u_1.h5");
  Field<double, 3> other(world, {7, 6, 5}, 0);
  Field<double, 2> flat(world, {7, 5}, 0);
  for (auto read : {std::function<void()>([&] { io::read_field(other, {output, "/g/u"}); }),
                    std::function<void()>([&] { io::read_field(flat, {output, "/g/u"}); })}) {
    try {
      read();
      ADD_FAILURE() << "a dataset of another shape was read";
    } catch (const io::IoError& e) {
      EXPECT_NE(std::string(e.what()).find("/g/u"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tessera
