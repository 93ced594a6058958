"""Front ends over the library: the command line, the demo and the Spark jobs."""
