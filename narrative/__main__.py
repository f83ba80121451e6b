from narrative.client import main

main()
