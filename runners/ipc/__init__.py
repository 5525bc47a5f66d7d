"""What the runner's processes share: typed messages (``protocol``), the socket they travel on (``wire``), shared
memory and the values placed in it (``arena``), and the CUDA driver calls behind it (``cuda``)."""
