from gdsdoctor.cli import main

main()
