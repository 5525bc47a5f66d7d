def custom_kernel(data):
    raise ValueError("boom from the submission")
