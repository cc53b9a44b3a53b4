"""Reporting: charts (pure plotly functions), the report's sections and HTML page, paper tables,
paired significance tests and the TensorBoard export. Reads evaluations; never evaluates."""
