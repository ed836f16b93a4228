/* fuzz_spec.c: the sweep spec reader (engine/plan: pdbx_spec_load over a spec file), then what
 * every caller does with a spec: validate it, expand its points, write it back as JSON.
 *
 * Also checks the reader's documented contract (plan.h): pdbx_spec_to_json() writes a spec that
 * pdbx_spec_from_json() reads back to an equal spec, so a spec the engine re-reads from the
 * launcher means the same thing. A difference aborts with both texts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/plan/plan.h"
#include "tests/fuzz/fuzz_common.h"
#include "tests/fuzz/fuzz_plan.h"

static char *spec_text(const pdbx_spec *s)
{
    cJSON *j = pdbx_spec_to_json(s);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!text)
        abort();               /* out of memory on a bounded spec: not the input's fault */
    return text;
}

static void check_round_trip(const pdbx_spec *s)
{
    char err[1024];
    char *text = spec_text(s);
    cJSON *back = cJSON_Parse(text);
    if (!back)
        abort();
    pdbx_spec s2;
    pdbx_spec_defaults(&s2);
    if (pdbx_spec_from_json(back, "round-trip", &s2, err, sizeof err) != 0) {
        fprintf(stderr, "fuzz_spec: the spec's own JSON is refused: %s\n%s\n", err, text);
        abort();
    }
    cJSON_Delete(back);
    char *text2 = spec_text(&s2);
    if (strcmp(text, text2) != 0) {
        fprintf(stderr, "fuzz_spec: round trip differs:\n%s\n%s\n", text, text2);
        abort();
    }
    cJSON_free(text);
    cJSON_free(text2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_setup();
    char path[512], err[1024];
    snprintf(path, sizeof path, "%s/spec.json", fuzz_tmpdir());
    fuzz_write_file(path, data, size);
    pdbx_spec spec;
    if (pdbx_spec_load(path, &spec, err, sizeof err) != 0)
        return 0;
    if (pdbx_spec_validate(&spec, err, sizeof err) != 0)
        return 0;
    fuzz_plan_points(&spec);
    check_round_trip(&spec);
    return 0;
}
