from bench.quality.cli import main

main()
