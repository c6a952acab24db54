// The `cannl` command-line program.
#include <iostream>

int main(int argc, char** argv) {
  (void)argc; (void)argv;
  std::cout << "cannl: usage: cannl <command> [options]\n";
  return 0;
}
