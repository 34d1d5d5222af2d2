/* Drives the C API: its error messages, compiling, emulating. */
#include <kvir-c/KVIR.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void show(const char *what, long rc) {
  printf("%s: %ld: %s\n", what, rc, kvir_last_error());
}

static void showNull(const char *what, kvir_module_t m) {
  printf("%s: %s: %s\n", what, m ? "module" : "NULL", kvir_last_error());
}

static char *readFile(const char *path) {
  FILE *f = fopen(path, "rb");
  long n;
  char *text;
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = calloc((size_t)n + 1, 1);
  if (fread(text, 1, (size_t)n, f) != (size_t)n)
    n = 0;
  fclose(f);
  return text;
}

int main(int argc, char **argv) {
  enum { ROWS = 3, HEADS = 4, DIM = 64 };
  static float oa[ROWS][HEADS][DIM], ob[ROWS][HEADS][DIM], o[ROWS][HEADS][DIM];
  static float la[ROWS][HEADS], lb[ROWS][HEADS], l[ROWS][HEADS];
  int64_t state[3] = {ROWS, HEADS, DIM}, lse[2] = {ROWS, HEADS};
  int64_t wrong[3] = {ROWS, 5, DIM};
  kvir_arg_t args[6];
  kvir_module_t m;
  char *text, *launches, names[256] = "";
  double worst = 0;
  int r, h, d;

  if (argc != 3)
    return 2;
  showNull("parse", kvir_module_parse("func.func @f( {"));
  showNull("spec", kvir_module_from_spec("{\"op\": \"merge_state\", "
                                         "\"dtype\": \"f16\"}"));
  showNull("spec", kvir_module_from_spec(
                       "{\"op\": \"merge_state\", \"num_heads\": 2, "
                       "\"head_dim\": 64, \"head_dims\": 64, "
                       "\"dtype\": \"f16\"}"));
  showNull("spec", kvir_module_from_spec("{op"));
  show("null module", kvir_compile(NULL, "sm_90a", argv[2]));

  text = readFile(argv[1]);
  m = kvir_module_parse(text);
  free(text);
  if (!m) {
    printf("parse failed: %s\n", kvir_last_error());
    return 1;
  }
  show("chip", kvir_compile(m, "sm_70", argv[2]));
  r = kvir_compile(m, "sm_90a", argv[2]);
  {
    const char *files[2] = {"kv_kernels.h", "kv_kernels.ptx"};
    int i;
    for (i = 0; i < 2; ++i) {
      char path[4096];
      FILE *f;
      snprintf(path, sizeof path, "%s/%s", argv[2], files[i]);
      if ((f = fopen(path, "rb"))) {
        strcat(names, i ? " " : "");
        strcat(names, files[i]);
        fclose(f);
      }
    }
  }
  printf("compile: %d: %s\n", r, names);

  for (r = 0; r < ROWS; ++r)
    for (h = 0; h < HEADS; ++h) {
      la[r][h] = (float)(r - h) * 0.5f;
      lb[r][h] = (float)(h - 2 * r) * 0.25f;
      for (d = 0; d < DIM; ++d) {
        oa[r][h][d] = sinf((float)(r * 131 + h * 17 + d));
        ob[r][h][d] = cosf((float)(r * 7 + h * 29 + d * 3));
        o[r][h][d] = NAN;
      }
      l[r][h] = NAN;
    }
  {
    void *data[6] = {oa, la, ob, lb, o, l};
    int i;
    for (i = 0; i < 6; ++i) {
      args[i].kind = KVIR_ARG_BUFFER;
      args[i].data = data[i];
      args[i].rank = i % 2 ? 2 : 3;
      args[i].shape = i % 2 ? lse : state;
      args[i].scalar = 0;
    }
  }
  show("arguments", kvir_emulate(m, "merge", "sm_90a", args, 5));
  args[1].rank = 1;
  show("rank", kvir_emulate(m, "merge", "sm_90a", args, 6));
  args[1].rank = 2;
  args[0].shape = wrong;
  show("shape", kvir_emulate(m, "merge", "sm_90a", args, 6));
  args[0].shape = state;
  args[0].kind = KVIR_ARG_F32;
  show("scalar", kvir_emulate(m, "merge", "sm_90a", args, 6));
  args[0].kind = KVIR_ARG_BUFFER;
  args[0].data = NULL;
  show("null buffer", kvir_emulate(m, "merge", "sm_90a", args, 6));
  args[0].data = oa;
  show("function", kvir_emulate(m, "nope", "sm_90a", args, 6));

  r = kvir_emulate(m, "merge", "sm_90a", args, 6);
  /* Base e: o = (e^la oa + e^lb ob) / (e^la + e^lb). */
  for (h = 0; h < ROWS * HEADS; ++h) {
    int row = h / HEADS, head = h % HEADS;
    double a = la[row][head], b = lb[row][head], top = a > b ? a : b;
    double wa = exp(a - top), wb = exp(b - top);
    double ref_l = top + log(wa + wb);
    if (!(fabs(l[row][head] - ref_l) <= 1e-5))
      worst = INFINITY;
    for (d = 0; d < DIM; ++d) {
      double ref = (wa * oa[row][head][d] + wb * ob[row][head][d]) / (wa + wb);
      double err = fabs(o[row][head][d] - ref);
      if (!(err <= worst))
        worst = isnan(err) ? INFINITY : err;
    }
  }
  printf("emulate: %d: max error %g\n", r, worst > 1e-5 ? worst : 0.0);
  launches = kvir_last_launches_json();
  printf("launches: %.60s\n", launches);
  kvir_free_string(launches);
  {
    uint32_t grid[3] = {1, 1, 1}, block[3] = {32, 1, 1};
    show("launch unknown",
         kvir_emulator_launch("nope", grid, block, 0, NULL, 0));
    show("launch flags",
         kvir_emulator_launch_ex("nope", grid, block, 0, NULL, 0, 6));
  }
  kvir_module_destroy(m);
  printf("done\n");
  return 0;
}
