/* fuzz_model.c: the HuggingFace config.json reader (engine/plan: pdbx_model_load over a file,
 * as `--model PATH` and a spec's "model": "PATH" read it), then the memory model and the op
 * shapes of a spec using that model, which divide by its sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "engine/plan/plan.h"
#include "tests/fuzz/fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    char path[512], err[1024];
    /* A checkout's config.json: the model's name comes from the directory. */
    snprintf(path, sizeof path, "%s/Fuzz-Model-1B", fuzz_tmpdir());
    static int made;
    if (!made && mkdir(path, 0700) != 0)
        abort();
    made = 1;
    snprintf(path, sizeof path, "%s/Fuzz-Model-1B/config.json", fuzz_tmpdir());
    fuzz_write_file(path, data, size);
    pdbx_spec spec;
    pdbx_spec_defaults(&spec);
    if (pdbx_model_load(path, &spec.model, err, sizeof err) != 0)
        return 0;
    /* The model as a spec field, through the same override the CLI uses (--model PATH). */
    if (pdbx_spec_set(&spec, "model", path, err, sizeof err) != 0)
        return 0;
    if (pdbx_spec_validate(&spec, err, sizeof err) != 0)
        return 0;
    pdbx_plan_point *pts = NULL;
    size_t n = 0;
    if (pdbx_plan_expand(&spec, &pts, &n, err, sizeof err) == 0) {
        for (size_t i = 0; i < n && i < 4; i++) {
            pdbx_op_shape shape;
            for (int op = 0; op < PDBX_OP_COUNT; op++)
                (void)pdbx_op_shape_for(&spec, pts[i].tp, pts[i].mbs, (pdbx_op)op, &shape);
        }
        free(pts);
    }
    return 0;
}
