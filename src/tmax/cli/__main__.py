from tmax.cli import main

main()
