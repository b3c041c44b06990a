"""Graphs and data: the graph result record and its conversions (edges, networkx, DOT), DAG utilities, recovery
metrics, ``plot_graph``, and the data generators and readers."""
