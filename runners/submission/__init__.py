"""The submission process (untrusted): loads the user's file and calls ``custom_kernel`` on command. See ``serve``."""
