/* driver: libFuzzer's entry points, shared by every harness (fuzz.h): logs
 * quieted and the harness's fuzz_setup once, then fuzz_input per input. */
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A harness without setup of its own gets this one (a weak definition). */
__attribute__((weak)) void fuzz_setup(void) {}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_quiet();
    fuzz_setup();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_input(data, size); }
