/* engine_check.c: the pre-launch check (engine_check.h). */
#include "engine/engine_check.h"

#include <stdio.h>
#include <string.h>

#include "engine/backends/registry.h"
#include "engine/plan/plan.h"

#define CHECK_ERR 512

/* The backend and dtype of the arguments, through the planner's own parsing and messages. */
static int parse(int argc, char **argv, pdbx_spec *s, char *err, size_t errlen)
{
    if (argc != 4) {
        snprintf(err, errlen, "--check: needs BACKEND DTYPE (e.g. --check auto bf16), got %d "
                 "argument%s", argc - 2, argc == 3 ? "" : "s");
        return -1;
    }
    pdbx_spec_defaults(s);
    if (pdbx_spec_set(s, "backend", argv[2], err, errlen) != 0 ||
        pdbx_spec_set(s, "dtype", argv[3], err, errlen) != 0)
        return -1;
    return 0;
}

int pdbx_engine_check_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--check") != 0)
        return -1;
    char err[CHECK_ERR] = "", notice[CHECK_ERR] = "";
    pdbx_spec s;
    if (parse(argc, argv, &s, err, sizeof err) != 0) {
        printf("%s\n", err);
        return 2;
    }
    pdbx_backend_choice be;
    if (pdbx_backend_choose(s.backend, &be, notice, sizeof notice, err, sizeof err) != 0) {
        printf("%s\n", err);
        return 1;
    }
    /* one rank, one thread: what a run's init needs to accept or refuse the dtype */
    pdbx_compute_config cfg = { .local_rank = 0, .local_size = 1, .world_rank = 0,
                                .world_size = 1, .blas_threads = 1, .dtype = s.dtype };
    pdbx_compute *c = NULL;
    int rc = be.compute->init(&cfg, &c, err, sizeof err);
    if (rc == 0) {
        printf("ok %s\n", be.compute->name);
        if (notice[0])
            printf("%s\n", notice);
        be.compute->fini(c);
    } else {
        printf("%s\n", err[0] ? err : "the compute backend did not start");
    }
    pdbx_backend_unload(&be);
    return rc == 0 ? 0 : 1;
}
