# expect: wrong_answer
# Reads the channels as BGR (swaps the red and blue weights).
def custom_kernel(data):
    (image,) = data
    return 0.1140 * image[..., 0] + 0.5870 * image[..., 1] + 0.2989 * image[..., 2]
