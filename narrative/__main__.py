from narrative.cli import main

main()
