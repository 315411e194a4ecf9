/* Test helper shared by the unit and mechanism suites. */
#ifndef CORDON_TEST_COMMON_PROC_H
#define CORDON_TEST_COMMON_PROC_H

/* Live processes whose command line (arguments joined by spaces) contains
 * needle; -1 when /proc cannot be read. */
int test_count_processes(const char *needle);

#endif
