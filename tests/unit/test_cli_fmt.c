/* test_cli_fmt.c: number formatting and table layout of store/util/fmt.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/util/fmt.h"

static void test_ms(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(pdbx_fmt_ms(812.34, 1, b, sizeof b), "812.3");
    assert_string_equal(pdbx_fmt_ms(12.346, 1, b, sizeof b), "12.35");
    assert_string_equal(pdbx_fmt_ms(1.23456, 1, b, sizeof b), "1.235");
    assert_string_equal(pdbx_fmt_ms(0.123456, 1, b, sizeof b), "0.1235");
    assert_string_equal(pdbx_fmt_ms(0.0123456, 1, b, sizeof b), "0.0123");
    assert_string_equal(pdbx_fmt_ms(12345.6, 1, b, sizeof b), "12346");
    assert_string_equal(pdbx_fmt_ms(0.0, 1, b, sizeof b), "0");
    assert_string_equal(pdbx_fmt_ms(3.0e-5, 1, b, sizeof b), "3.00e-05");
    /* Invalid never prints as a number. */
    assert_string_equal(pdbx_fmt_ms(5.0, 0, b, sizeof b), "N/A");
    assert_string_equal(pdbx_fmt_ms(NAN, 1, b, sizeof b), "N/A");
    assert_string_equal(pdbx_fmt_ms(INFINITY, 1, b, sizeof b), "N/A");
}

static void test_sizes(void **state)
{
    (void)state;
    char b[32];
    assert_string_equal(pdbx_fmt_size(512, b, sizeof b), "512 B");
    assert_string_equal(pdbx_fmt_size(4096, b, sizeof b), "4.0 KiB");
    assert_string_equal(pdbx_fmt_size(1.5 * 1024 * 1024, b, sizeof b), "1.5 MiB");
    assert_string_equal(pdbx_fmt_size(64.0 * 1024 * 1024 * 1024, b, sizeof b), "64 GiB");
    assert_string_equal(pdbx_fmt_size(-1, b, sizeof b), "N/A");
    assert_string_equal(pdbx_fmt_gb(47.94e9, b, sizeof b), "47.9");
    assert_string_equal(pdbx_fmt_gb(NAN, b, sizeof b), "N/A");
    assert_string_equal(pdbx_fmt_gbs(123.4, 1, b, sizeof b), "123");
    assert_string_equal(pdbx_fmt_gbs(12.34, 1, b, sizeof b), "12.3");
    assert_string_equal(pdbx_fmt_gbs(12.34, 0, b, sizeof b), "N/A");
    assert_string_equal(pdbx_fmt_ratio(0.51234, 1, b, sizeof b), "0.512");
    assert_string_equal(pdbx_fmt_ratio(12.3, 1, b, sizeof b), "12.30");
    assert_string_equal(pdbx_fmt_ratio(1.0, 0, b, sizeof b), "N/A");
}

static void test_misc(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(pdbx_fmt_duration(42.4, b, sizeof b), "42s");
    assert_string_equal(pdbx_fmt_duration(185, b, sizeof b), "3m05s");
    assert_string_equal(pdbx_fmt_duration(7620, b, sizeof b), "2h07m");
    assert_string_equal(pdbx_fmt_duration(-1, b, sizeof b), "N/A");
    assert_string_equal(pdbx_fmt_time(0, b, sizeof b), "N/A");
    assert_int_equal(strlen(pdbx_fmt_time(1.7e9, b, sizeof b)), strlen("2023-11-14 22:13"));
    int v[] = { 1, 2, 4, 8 };
    assert_string_equal(pdbx_fmt_int_list(v, 4, b, sizeof b), "1,2,4,8");
    assert_string_equal(pdbx_fmt_int_list(v, 0, b, sizeof b), "-");
    char small[5];
    assert_string_equal(pdbx_fmt_int_list(v, 4, small, sizeof small), "1,2,");   /* truncated, terminated */
}

/* A parallel config's three labels: EP only when > 1 (ep 0 and 1 read as a dense config). */
static void test_config_labels(void **state)
{
    (void)state;
    char b[64];
    assert_string_equal(pdbx_fmt_config(PDBX_CFG_LABEL_TAB, 1, 1, 2, 1, b, sizeof b), "TP1 PP1 DP2");
    assert_string_equal(pdbx_fmt_config(PDBX_CFG_LABEL_TAB, 1, 1, 2, 2, b, sizeof b), "TP1 PP1 DP2 EP2");
    assert_string_equal(pdbx_fmt_config(PDBX_CFG_LABEL_HEADER, 2, 4, 1, 0, b, sizeof b), "TP 2  PP 4  DP 1");
    assert_string_equal(pdbx_fmt_config(PDBX_CFG_LABEL_HEADER, 1, 1, 2, 2, b, sizeof b), "TP 1  PP 1  DP 2  EP 2");
    assert_string_equal(pdbx_fmt_config(PDBX_CFG_LABEL_DIMS, 1, 1, 4, 1, b, sizeof b), "1x1x4");
    assert_string_equal(pdbx_fmt_config(PDBX_CFG_LABEL_DIMS, 1, 1, 4, 4, b, sizeof b), "1x1x4x4");
    char small[6];
    assert_string_equal(pdbx_fmt_config(PDBX_CFG_LABEL_DIMS, 1, 1, 4, 4, small, sizeof small), "1x1x4");
}

/* Prints a table into a memory buffer and compares it with the expected text. */
static void test_table(void **state)
{
    (void)state;
    pdbx_table *t = pdbx_table_new(3);
    assert_non_null(t);
    assert_int_equal(pdbx_table_header(t, 0, "mbs", PDBX_ALIGN_RIGHT), 0);
    assert_int_equal(pdbx_table_header(t, 1, "status", PDBX_ALIGN_LEFT), 0);
    assert_int_equal(pdbx_table_header(t, 2, "attn_q", PDBX_ALIGN_RIGHT), 0);
    assert_int_equal(pdbx_table_header(t, 3, "x", PDBX_ALIGN_RIGHT), -1);     /* no such column */
    assert_int_equal(pdbx_table_set(t, 0, "%d", 1), -1);                        /* no row yet */
    for (int mbs = 1; mbs <= 128; mbs *= 8) {
        assert_int_equal(pdbx_table_add_row(t), 0);
        assert_int_equal(pdbx_table_set(t, 0, "%d", mbs), 0);
        assert_int_equal(pdbx_table_set(t, 1, "%s", mbs < 64 ? "ok" : "predicted_oom"), 0);
        assert_int_equal(pdbx_table_set(t, 2, "%s", mbs < 64 ? "1.235" : PDBX_NA), 0);
    }
    assert_int_equal(pdbx_table_rows(t), 3);
    assert_int_equal(pdbx_table_col_width(t, 1), strlen("predicted_oom"));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    pdbx_table_print(t, f, "  ");
    fclose(f);
    assert_string_equal(buf,
                        "  mbs  status         attn_q\n"
                        "    1  ok              1.235\n"
                        "    8  ok              1.235\n"
                        "   64  predicted_oom     N/A\n");
    free(buf);
    /* Hiding the last column: the (now last) left-aligned column carries no trailing blanks. */
    pdbx_table_hide(t, 2, 1);
    f = open_memstream(&buf, &len);
    pdbx_table_print(t, f, NULL);
    fclose(f);
    assert_string_equal(buf, "mbs  status\n  1  ok\n  8  ok\n 64  predicted_oom\n");
    free(buf);
    /* An empty last cell leaves no trailing blanks, an empty middle cell keeps alignment. */
    pdbx_table_hide(t, 2, 0);
    assert_int_equal(pdbx_table_add_row(t), 0);
    assert_int_equal(pdbx_table_set(t, 0, "%d", 128), 0);
    assert_int_equal(pdbx_table_set(t, 2, "%s", "9.000"), 0);
    assert_int_equal(pdbx_table_add_row(t), 0);
    assert_int_equal(pdbx_table_set(t, 1, "%s", "x"), 0);
    f = open_memstream(&buf, &len);
    pdbx_table_print(t, f, NULL);
    fclose(f);
    assert_string_equal(buf,
                        "mbs  status         attn_q\n"
                        "  1  ok              1.235\n"
                        "  8  ok              1.235\n"
                        " 64  predicted_oom     N/A\n"
                        "128                  9.000\n"
                        "     x\n");
    free(buf);
    pdbx_table_free(t);
}

/* Many rows: the row array grows (realloc path) and every cell survives. */
static void test_table_grow(void **state)
{
    (void)state;
    pdbx_table *t = pdbx_table_new(2);
    assert_non_null(t);
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(pdbx_table_add_row(t), 0);
        assert_int_equal(pdbx_table_set(t, 0, "%d", i), 0);
        assert_int_equal(pdbx_table_set(t, 1, "row %d", i), 0);
        assert_int_equal(pdbx_table_set(t, 1, "r%d", i), 0);    /* overwrite frees the old cell */
    }
    assert_int_equal(pdbx_table_rows(t), 1000);
    assert_int_equal(pdbx_table_col_width(t, 0), 3);
    assert_int_equal(pdbx_table_col_width(t, 1), 4);
    pdbx_table_free(t);
    pdbx_table_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ms),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_misc),
        cmocka_unit_test(test_config_labels),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_table_grow),
    };
    return cmocka_run_group_tests_name("cli_fmt", tests, NULL, NULL);
}
