/* Which sanitizer a test is built with, for tests that size their cases by it: the Check
 * suites (through test_util.h) and the CUDA ops' own harness (tests/cuda). */
#ifndef FRL_TESTS_TEST_SANITIZER_H
#define FRL_TESTS_TEST_SANITIZER_H

/* 1 in a sanitizer build (gcc's macros; clang's __has_feature for clang). Learning
 * tests there run a short budget that exercises the code under the sanitizer and leave
 * the learning target to the plain builds, saying so: a sanitizer multiplies the time
 * 3 to 10 times, and the same learning run in four configurations checks nothing more. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FRL_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FRL_TEST_SANITIZED 1
#endif
#endif
#ifndef FRL_TEST_SANITIZED
#define FRL_TEST_SANITIZED 0
#endif

/* 1 under ThreadSanitizer, the slowest build (5 to 50 times): tests whose cases differ
 * in arithmetic, not in threads, run fewer of them there and say so. */
#if defined(__SANITIZE_THREAD__)
#define FRL_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FRL_TEST_TSAN 1
#endif
#endif
#ifndef FRL_TEST_TSAN
#define FRL_TEST_TSAN 0
#endif

#endif
