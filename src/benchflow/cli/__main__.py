from benchflow.cli.main import main

main()
