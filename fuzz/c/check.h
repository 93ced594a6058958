/*
 * check.h: the one assertion of the libFuzzer harnesses. A property that does not hold
 * traps, which libFuzzer reports as a crash and saves the input.
 */
#ifndef PBA_FUZZ_CHECK_H
#define PBA_FUZZ_CHECK_H

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            __builtin_trap();                                                                \
        }                                                                                    \
    } while (0)

#endif /* PBA_FUZZ_CHECK_H */
