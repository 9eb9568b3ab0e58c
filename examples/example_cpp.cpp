// example_cpp.cpp -- a small C++ program instrumented with the libtrace
// client: RAII zones (lt::Zone via LT_ZONE_SCOPED), zone text, messages,
// plots, frame marks and named std::threads.
//
//     capture-release -o run.tracy &
//     ./example_cpp [frames]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include <trace_client.h>

namespace {

std::vector<int> make_data(std::mt19937 &rng, size_t n) {
    LT_ZONE_SCOPED("make_data");
    std::vector<int> v(n);
    std::uniform_int_distribution<int> d(0, 1000000);
    for (auto &x : v) x = d(rng);
    return v;
}

long sort_and_sum(std::vector<int> &v) {
    LT_ZONE_SCOPED_FUNC();
    {
        LT_ZONE_SCOPED("sort");
        std::sort(v.begin(), v.end());
    }
    LT_ZONE_SCOPED("sum");
    return std::accumulate(v.begin(), v.end(), 0L);
}

void worker(int id, int frames) {
    lt_thread_name(("sorter " + std::to_string(id)).c_str());
    std::mt19937 rng(static_cast<unsigned>(id));
    for (int f = 0; f < frames; f++) {
        static uint32_t loc = lt_loc_register(LT_LOC_USER, "frame", __FILE__, __LINE__);
        lt::Zone zone(loc);
        std::string note = "frame " + std::to_string(f);
        zone.text(note.c_str(), note.size());
        auto v = make_data(rng, 2000 + 100 * static_cast<size_t>(f));
        long s = sort_and_sum(v);
        lt_plot(LT_PLOT_ID("sum"), static_cast<double>(s));
    }
    lt_message_str("sorter finished");
}

} // namespace

int main(int argc, char **argv) {
    int frames = argc > 1 ? std::atoi(argv[1]) : 10;
    LT_ZONE_SCOPED("main");
    lt_signpost("start", "C++ example");
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; i++) threads.emplace_back(worker, i, frames);
    for (int f = 0; f < frames; f++) {
        LT_ZONE_SCOPED("main frame");
        std::mt19937 rng(static_cast<unsigned>(f));
        auto v = make_data(rng, 1000);
        sort_and_sum(v);
        lt_frame_mark(nullptr);
    }
    for (auto &t : threads) t.join();
    lt_message_str("all sorters joined");
    std::printf("done: %d frames\n", frames);
    return 0;
}
