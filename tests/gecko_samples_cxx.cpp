// gecko_samples_cxx.cpp - a C++ function for the converter's demangling
// test (gecko_samples_gen puts its address in a sample; the profile must
// name it "rtprof_test::Mixer::process(int) (in gecko_samples_gen)").
namespace rtprof_test {
struct Mixer {
	static int process(int frames);
};

__attribute__((noinline)) int
Mixer::process(int frames)
{
	return frames * 2 + 1;
}
} // namespace rtprof_test

extern "C" const void *gs_cxx_function(void);

extern "C" const void *
gs_cxx_function(void)
{
	return reinterpret_cast<const void *>(&rtprof_test::Mixer::process);
}
