package model

import "strings"

// storedConfigDrivePrefix starts the instance_info configdrive of a drive
// kept in the node_configdrives table. Neither a URL nor gzip+base64 text
// can start so, and the API shows any configdrive as "******".
const storedConfigDrivePrefix = "ferric-stored-configdrive:"

// StoredConfigDriveRef is the instance_info configdrive that refers to the
// stored drive id.
func StoredConfigDriveRef(id string) string { return storedConfigDrivePrefix + id }

// StoredConfigDriveID is the stored drive an instance_info configdrive
// refers to, if it is such a reference.
func StoredConfigDriveID(configDrive any) (string, bool) {
	s, ok := configDrive.(string)
	if !ok {
		return "", false
	}
	return strings.CutPrefix(s, storedConfigDrivePrefix)
}
