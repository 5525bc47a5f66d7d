"""The API's routes, one module per resource; each handler is one service call and one conversion."""
