package disk

// DropPartition is dropPartition, for a test on an image file (whose
// partitions have no device of their own to wipe).
var DropPartition = dropPartition
