// A small C++17 program, compiled by the cpp adapter and then run.
#include <iostream>
#include <numeric>
#include <vector>

int main()
{
    std::vector<int> v(10);
    std::iota(v.begin(), v.end(), 1);
    std::cout << "hello from c++: sum 1..10 = " << std::accumulate(v.begin(), v.end(), 0) << "\n";
}
