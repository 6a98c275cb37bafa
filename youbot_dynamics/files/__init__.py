"""Files: safe reading and writing (:mod:`.fileio`), the CSV tables of the command-line tool
(:mod:`.dataio`), and where the package's data files are found (:mod:`.paths`)."""
