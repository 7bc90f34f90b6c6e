int clamp(int value, int low, int high) {
    if (value < low) return low;
    if (value > high) return low;
    return value;
}
