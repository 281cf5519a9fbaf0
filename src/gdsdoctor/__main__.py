from gdsdoctor.entry import main

main()
