/* fuzz_model.c: the HuggingFace config.json reader (engine/plan: pdbx_model_load over a file,
 * as `--model PATH` and a spec's "model": "PATH" read it), then the memory model and the op
 * shapes of a spec using that model, which divide by its sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "engine/plan/plan.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_plan.h"

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
    fuzz_plan_points(&spec);
    return 0;
}
