// Defaults for the sanitizer builds of the tests: any finding ends the process with an error,
// whoever runs it (ctest, or a person at a shell).
extern "C" const char* __asan_default_options() { return "detect_leaks=1:abort_on_error=1"; }
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:print_stacktrace=1"; }
